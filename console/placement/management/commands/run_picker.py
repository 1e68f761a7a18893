"""`manage.py run_picker`: the Envoy ext_proc endpoint picker (docs/gateway.md)."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.inventory.selectors import source_exists
from console.placement.doors.extproc.processes import PickerProcesses
from console.placement.doors.extproc.server import PickerServer
from console.placement.doors.loopserver import serve_until_stopped

MULTIPROC = "PROMETHEUS_MULTIPROC_DIR"


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
        parser.add_argument(
            "--processes",
            type=int,
            default=settings.LOCUS_PICKER_PROCESSES,
            help="Pickers on the same ports, each a full picker with its own engine "
            "(SO_REUSEPORT; default 1).",
        )

    def handle(
        self,
        *args: Any,
        port: int,
        health_port: int,
        source: str | None,
        host: str,
        metrics_port: int | None,
        processes: int,
        **_: Any,
    ) -> None:
        if not 1 <= processes <= 64:
            raise CommandError(f"--processes {processes}: between 1 and 64")
        ports = {"--port": port, "--health-port": health_port}
        if metrics_port is not None:
            ports["--metrics-port"] = metrics_port
        for name, value in ports.items():
            if not 0 <= value < 65536:
                raise CommandError(f"{name} {value}: not a TCP port (0-65535)")
        taken = [v for v in ports.values() if v != 0]
        if len(taken) != len(set(taken)):
            raise CommandError(f"two of {', '.join(ports)} are the same port")
        if source is not None and not source_exists(source):
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
        # The others bind the ports this one bound (port 0 resolved), with SO_REUSEPORT.
        others = PickerProcesses(
            count=processes - 1,
            port=server.bound_port,
            health_port=server.bound_health_port,
            source=source,
            host=host,
        ).start()
        metrics = f", metrics on {host}:{server.bound_metrics_port}" if metrics_port else ""
        if metrics_port is not None and processes > 1 and not os.environ.get(MULTIPROC):
            # Only this process serves /metrics; the others' series reach it through
            # prometheus_client's multiprocess directory, or not at all.
            self.stderr.write(f"warning: /metrics shows this process only; set {MULTIPROC}")
        self.stdout.write(
            f"picker: ext_proc on {host}:{server.bound_port}, "
            f"health on {host}:{server.bound_health_port}{metrics}, "
            f"source {source or '(per request)'}, {processes} process"
            f"{'es' if processes > 1 else ''}",
        )
        self.stdout.flush()

        serve_until_stopped(server, others)
