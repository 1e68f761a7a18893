"""`manage.py demo_fleet`: run the simulated fleet against the console (see console.demo).

The simulated fleet runs at the speeds of `--truth` (fleet-demo-truth.yaml) while the
inventory holds the nominal fleet-demo.yaml: a real fleet is never what its inventory says,
and calibration (docs/twin.md) finds the difference from the recorded outcomes."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any

import requests
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.demo.exporters import serve
from console.demo.fleet import DemoFleet, repeat_trace
from console.demo.management.commands.demo_prepare import demo_dir
from console.inventory.selectors import inventory_topology
from optimizer import argtypes
from optimizer.errors import InputFileError
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace


class Command(BaseCommand):
    help = "Serve simulated exporters and replay a trace through the decision API."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--trace", default=settings.LOCUS_DEMO_TRACE)
        parser.add_argument(
            "--load",
            type=argtypes.positive,
            default=1.0,
            help="Arrival-rate multiplier of the trace.",
        )
        parser.add_argument(
            "--hours",
            type=argtypes.positive,
            default=4.0,
            help="How long to keep replaying (the trace repeats).",
        )
        parser.add_argument(
            "--exporters-port", type=argtypes.port, default=settings.LOCUS_DEMO_EXPORTERS_PORT
        )
        parser.add_argument(
            "--web-url", type=argtypes.http_url, default=settings.LOCUS_DEMO_WEB_URL
        )
        parser.add_argument(
            "--truth",
            default=settings.LOCUS_DEMO_TRUTH_TOPOLOGY,
            help="topology the fleet really runs at ('' to run the inventory's own)",
        )

    def handle(
        self,
        *args: Any,
        trace: str,
        load: float,
        hours: float,
        exporters_port: int,
        web_url: str,
        truth: str,
        **options: Any,
    ) -> None:
        key_file = demo_dir() / "service-key"
        if not key_file.is_file():
            raise CommandError(f"{key_file} is missing: run `manage.py demo_prepare` first")
        try:
            requests_ = load_trace(trace, load=load)
        except InputFileError as exc:
            raise CommandError(str(exc)) from exc
        self._wait_for(web_url)
        fleet = DemoFleet(
            topology=self._truth(truth),
            trace=repeat_trace(requests_, hours * 3600),
            api=web_url,
            key=key_file.read_text().strip(),
        )
        serve(fleet, exporters_port)
        self.stdout.write(
            f"demo fleet: {len(fleet.node_names)} nodes, exporters on "
            f":{exporters_port}, replaying {Path(trace).name} at {load:g}x"
        )
        # SIGTERM (the supervisor's stop, docker stop) ends the run as Ctrl-C does: with the
        # totals printed and status 0.
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            stats = fleet.run()
        except KeyboardInterrupt:
            stats = fleet.stats
        self.stdout.write(f"demo fleet stopped: {stats}")

    def _truth(self, path: str) -> Topology:
        """The fleet as it really runs: the truth file when it describes the inventory's nodes
        (same names, models and accelerators), else the inventory itself."""
        inventory = inventory_topology()
        if not path:
            return inventory
        try:
            truth = load_topology(path)
        except InputFileError as exc:
            raise CommandError(str(exc)) from exc

        def layout(t: Topology) -> set[tuple[str, str, int, tuple[str, ...]]]:
            return {(n.name, n.accelerator, n.gpus, tuple(sorted(n.models))) for n in t.nodes}

        if layout(truth) != layout(inventory):
            self.stderr.write(f"{path} does not describe the inventory's nodes; not used")
            return inventory
        self.stdout.write(f"the fleet really runs as {Path(path).name}")
        return truth

    def _wait_for(self, web_url: str, seconds: float = 120.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{web_url}/healthz", timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(1)
        raise CommandError(f"the console at {web_url} did not come up in {seconds:.0f}s")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
