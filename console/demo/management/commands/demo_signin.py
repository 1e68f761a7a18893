"""`manage.py demo_signin`: print the demo's sign-in line once the console answers, then wait.

`make run` starts it with the other processes (Procfile), and its supervisor holds the line
until the other processes' start-up output is done (console/demo/supervisor.py, `--last`), so
it comes last, where a user looks. It stays up doing nothing because the supervisor stops
every process as soon as one exits; SIGTERM ends it with status 0.
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import requests
from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from console.demo.management.commands.demo_prepare import demo_dir
from optimizer import argtypes


class Command(BaseCommand):
    help = "Print the demo's sign-in line once the console answers /healthz, then wait."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--web-url", default=settings.LOCUS_DEMO_WEB_URL)
        parser.add_argument(
            "--exporters-port", type=argtypes.port, default=settings.LOCUS_DEMO_EXPORTERS_PORT
        )
        parser.add_argument("--timeout", type=argtypes.positive, default=300.0)

    def handle(
        self, *args: Any, web_url: str, exporters_port: int, timeout: float, **options: Any
    ) -> None:
        deadline = time.monotonic() + timeout
        # The fleet's exporters answer once the fleet runs: after its last start-up line.
        exporters = f"http://127.0.0.1:{exporters_port}/"
        while not (_healthy(web_url) and _answers(exporters)):
            if time.monotonic() > deadline:
                self.stderr.write(f"the console did not answer at {web_url} in {timeout:.0f} s")
                break
            time.sleep(0.5)
        else:
            file = demo_dir() / "admin-password"
            password = file.read_text().strip() if file.is_file() else f"(see {file})"
            line = f"Locus is up: open {web_url}/ and sign in as admin / {password}"
            self.stdout.write(self.style.SUCCESS(line))
        self.stdout.flush()
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        while True:
            signal.pause()  # until the supervisor stops it


def _answers(url: str) -> bool:
    """Whether anything serves HTTP at `url` (the exporters answer their root with a 404)."""
    try:
        requests.get(url, timeout=2)
    except requests.RequestException:
        return False
    return True


def _healthy(web_url: str) -> bool:
    try:
        return requests.get(f"{web_url}/healthz", timeout=2).ok
    except requests.RequestException:
        return False
