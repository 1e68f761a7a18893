"""`manage.py run_router`: Locus as an OpenAI-compatible router (docs/router.md)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.inventory.selectors import source_exists
from console.placement.doors.loopserver import serve_until_stopped
from console.placement.doors.router.app import RouterServer
from console.placement.doors.router.processes import RouterProcesses


class Command(BaseCommand):
    help = (
        "Serve OpenAI's /v1/completions and /v1/chat/completions on --port: each call is "
        "placed by the decision engine and forwarded to the node it picked."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=settings.LOCUS_ROUTER_PORT)
        parser.add_argument("--host", default=settings.LOCUS_ROUTER_HOST)
        parser.add_argument(
            "--source",
            default=settings.LOCUS_ROUTER_SOURCE or None,
            help="The request source of calls that name none (an x-locus-source header or a "
            "locus_source body field overrides it).",
        )
        parser.add_argument(
            "--processes",
            type=int,
            default=settings.LOCUS_ROUTER_PROCESSES,
            help="Routers on the same port, each with its own engine (SO_REUSEPORT; default 1).",
        )

    def handle(
        self, *args: Any, port: int, host: str, source: str | None, processes: int, **_: Any
    ) -> None:
        if not 1 <= processes <= 64:
            raise CommandError(f"--processes {processes}: between 1 and 64")
        if not 0 <= port < 65536:
            raise CommandError(f"--port {port}: not a TCP port (0-65535)")
        if source is not None and not source_exists(source):
            raise CommandError(f"--source {source!r}: no such request source in the inventory")
        try:
            server = RouterServer(port=port, source=source, host=host).start()
        except OSError as exc:  # an address in use or that cannot be bound
            raise CommandError(f"cannot listen on {host}:{port}: {exc}") from exc
        others = RouterProcesses(
            count=processes - 1, port=server.bound_port, source=source, host=host
        ).start()
        auth = "open (no key asked)" if settings.LOCUS_ROUTER_OPEN else "service keys"
        self.stdout.write(
            f"router: OpenAI API on {server.url}/v1, source {source or '(per request)'}, "
            f"{auth}, {processes} process{'es' if processes > 1 else ''}"
        )
        self.stdout.flush()

        serve_until_stopped(server, others)
