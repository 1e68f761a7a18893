"""`manage.py run_picker`: the Envoy ext_proc endpoint picker (docs/gateway.md)."""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.gateway.server import PickerServer
from console.inventory.models import Source
from console.placement.engine.runtime import runtime


class Command(BaseCommand):
    help = (
        "Serve the Gateway API Inference Extension's endpoint picker protocol (Envoy "
        "ext_proc) on --port, and gRPC health on --health-port."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=settings.LOCUS_PICKER_PORT)
        parser.add_argument("--health-port", type=int, default=settings.LOCUS_PICKER_HEALTH_PORT)
        parser.add_argument(
            "--source",
            default=settings.LOCUS_PICKER_SOURCE or None,
            help="The request source this gateway serves (a header x-locus-source overrides).",
        )
        parser.add_argument("--host", default=settings.LOCUS_PICKER_HOST)
        parser.add_argument(
            "--metrics-port",
            type=int,
            default=settings.LOCUS_PICKER_METRICS_PORT or None,
            help="Serve Prometheus /metrics on this port (default: off).",
        )

    def handle(
        self,
        *args: Any,
        port: int,
        health_port: int,
        source: str | None,
        host: str,
        metrics_port: int | None,
        **_: Any,
    ) -> None:
        ports = {"--port": port, "--health-port": health_port}
        if metrics_port is not None:
            ports["--metrics-port"] = metrics_port
        for name, value in ports.items():
            if not 0 <= value < 65536:
                raise CommandError(f"{name} {value}: not a TCP port (0-65535)")
        taken = [v for v in ports.values() if v != 0]
        if len(taken) != len(set(taken)):
            raise CommandError(f"two of {', '.join(ports)} are the same port")
        if source is not None and not Source.objects.filter(name=source).exists():
            raise CommandError(f"--source {source!r}: no such request source in the inventory")
        try:
            server = PickerServer(
                port=port,
                health_port=health_port,
                source=source,
                host=host,
                metrics_port=metrics_port,
            )
            server.start()
        except (RuntimeError, OSError) as exc:  # an address in use or that cannot be bound
            where = "/".join(str(p) for p in ports.values())
            raise CommandError(f"cannot listen on {host}:{where}: {exc}") from exc
        metrics = f", metrics on {host}:{server.bound_metrics_port}" if metrics_port else ""
        self.stdout.write(
            f"picker: ext_proc on {host}:{server.bound_port}, "
            f"health on {host}:{server.bound_health_port}{metrics}, "
            f"source {source or '(per request)'}",
        )
        self.stdout.flush()

        def stop(signum: int, frame: FrameType | None) -> None:
            server.stop()

        signal.signal(signal.SIGTERM, stop)
        try:
            server.wait()
        except KeyboardInterrupt:
            server.stop()
        # Write what the recorder still holds: nothing the picker decided is lost on exit.
        runtime().recorder.stop(timeout=10.0)
