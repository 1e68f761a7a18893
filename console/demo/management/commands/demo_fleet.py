"""`manage.py demo_fleet`: the living demo's fleet and its clients (see console.demo.fleet).

The nodes run at the speeds of `--truth` (fleet-demo-truth.yaml) while the inventory holds the
nominal fleet-demo.yaml: a real fleet is never what its inventory says, and calibration
(docs/twin.md) finds the difference from the outcomes the router records."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.demo.fleet import RouterNotReady, run_fleet
from console.demo.management.commands.demo_prepare import demo_dir
from console.demo.traffic import DemoTraffic, TrafficStats, repeat_trace
from console.inventory.selectors import inventory_topology
from optimizer import argtypes
from optimizer.arrivals import draw_requests
from optimizer.emulator import FleetServer
from optimizer.errors import InputFileError
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace


class Command(BaseCommand):
    help = "Serve the inventory's nodes as emulated endpoints; replay a trace through the router."

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
            "--router-url",
            type=argtypes.http_url,
            default=settings.LOCUS_DEMO_ROUTER_URL,
            help="The router the clients call.",
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
        router_url: str,
        truth: str,
        **options: Any,
    ) -> None:
        key_file = demo_dir() / "service-key"
        if not key_file.is_file():
            raise CommandError(f"{key_file} is missing: run `manage.py demo_prepare` first")
        try:
            arrivals = repeat_trace(load_trace(trace, load=load), hours * 3600)
        except InputFileError as exc:
            raise CommandError(str(exc)) from exc
        inventory = inventory_topology()
        try:
            server = FleetServer(inventory, truth=self._truth(truth, inventory))
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        traffic = DemoTraffic(
            requests=draw_requests(arrivals, inventory, seed=0),
            arrivals=[r.arrival_s for r in arrivals],
            router_url=router_url,
            key=key_file.read_text().strip(),
        )
        self.stdout.write(
            f"demo fleet: {len(inventory.nodes)} emulated nodes at their addresses, replaying "
            f"{Path(trace).name} at {load:g}x through the router at {router_url}"
        )
        try:
            stats = asyncio.run(run_fleet(server, traffic, report=self._report))
        except OSError as exc:  # a node's address cannot be bound
            raise CommandError(f"the emulated nodes could not listen: {exc}") from exc
        except RouterNotReady as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"demo fleet stopped: {stats}")

    def _report(self, stats: TrafficStats) -> None:
        self.stdout.write(f"demo clients: {stats}")

    def _truth(self, path: str, inventory: Topology) -> Topology | None:
        """The fleet as it really runs: the truth file when it describes the inventory's nodes
        (same names, sites, models and accelerators), else the inventory itself (None)."""
        if not path:
            return None
        try:
            truth = load_topology(path)
        except InputFileError as exc:
            raise CommandError(str(exc)) from exc

        def layout(t: Topology) -> set[tuple[str, str, str, int, tuple[str, ...]]]:
            return {
                (n.name, n.site, n.accelerator, n.gpus, tuple(sorted(n.models))) for n in t.nodes
            }

        if layout(truth) != layout(inventory):
            self.stderr.write(f"{path} does not describe the inventory's nodes; not used")
            return None
        self.stdout.write(f"the fleet really runs as {Path(path).name}")
        return truth
