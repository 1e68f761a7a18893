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
from console.inventory.models import Node
from optimizer import argtypes


class Command(BaseCommand):
    help = "Print the demo's sign-in line once the console, router and fleet answer; wait."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--web-url", default=settings.LOCUS_DEMO_WEB_URL)
        parser.add_argument(
            "--router-url",
            type=argtypes.http_url,
            default=settings.LOCUS_DEMO_ROUTER_URL,
        )
        parser.add_argument("--timeout", type=argtypes.positive, default=300.0)

    def handle(
        self, *args: Any, web_url: str, router_url: str, timeout: float, **options: Any
    ) -> None:
        deadline = time.monotonic() + timeout
        # Up means: the console answers, the router holds a snapshot to route on, and the
        # demo fleet's emulated nodes serve (after the fleet's last start-up line).
        node = Node.objects.exclude(address="").order_by("name").first()
        checks = [f"{web_url}/healthz", f"{router_url}/health"]
        if node is not None:
            checks.append(f"http://{node.address}/health")
        while not all(_healthy(url) for url in checks):
            if time.monotonic() > deadline:
                self.stderr.write(f"the demo did not come up in {timeout:.0f} s: {checks}")
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


def _healthy(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).ok
    except requests.RequestException:
        return False
