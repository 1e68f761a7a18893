"""A known truth for link-bandwidth calibration (issue #30), shared by the optimizer's test
of it and the console's: a P/D fleet whose edge links really carry half their nominal
bandwidth, and traffic split over them.

The fleet is the EU half of `pd-two-regions.yaml` without the core's decode node and one of
its mixed nodes, so long prompts prefilled at the core mostly decode at the edges and their KV
crosses the edge links. The traffic's split stage is the bandwidth-blind one
(`pd-threshold-blind`): it splits whatever the links' bandwidth, so both edge links carry
hundreds of transfers. Light load (utilisation 0.3), as queue-dominated TTFT rows are left out
of the fit (design.QUEUE_SHARE)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from optimizer.arrivals import draw_requests
from optimizer.capacity import FleetCapacity, TokenMix, load_for_utilisation
from optimizer.decide.registry import get_splitter, load_policy
from optimizer.observations import (
    Observations,
    load_observations,
    simulated_observations,
    write_observations,
)
from optimizer.sim import TelemetryModel, simulate
from optimizer.topology import Topology
from optimizer.topology_files import parse_topology
from optimizer.traces import load_trace
from tests.optimizer.fleets import MOONCAKE, REPO

PD_FLEET = REPO / "optimizer" / "topologies" / "pd-two-regions.yaml"
EU = {"fra-core", "muc-edge", "ams-edge"}
BANDWIDTH_FACTOR = 0.5  # the truth's edge links carry half their nominal bandwidth


def pd_eu_fleet(factor: float = 1.0) -> Topology:
    """The EU P/D fleet, every link's bandwidth times `factor`."""
    doc: dict[str, Any] = yaml.safe_load(PD_FLEET.read_text())
    doc["sites"] = [s for s in doc["sites"] if s["name"] in EU]
    doc["links"] = [lk for lk in doc["links"] if {lk["a"], lk["b"]} <= EU]
    for link in doc["links"]:
        link["bandwidth_gbps"] *= factor
    drop = {"fra-d1", "fra-m2"}
    doc["nodes"] = [n for n in doc["nodes"] if n["site"] in EU and n["name"] not in drop]
    doc["sources"] = [s for s in doc["sources"] if s["site"] in EU]
    total = sum(s["share"] for s in doc["sources"])
    for source in doc["sources"]:
        source["share"] = round(source["share"] / total, 4)
    return parse_topology(yaml.safe_dump(doc), "pd-eu.yaml")


def observe(nominal: Topology, truth: Topology, out: Path, limit: int = 2000) -> Observations:
    """Serve `limit` Mooncake requests on `truth` (split by `pd-threshold-blind`), write what
    was observed to `out`, and load it against `nominal`."""
    unscaled = load_trace(str(MOONCAKE), limit=limit)
    load = load_for_utilisation(FleetCapacity(nominal), TokenMix.of(unscaled), 0.3)
    trace = load_trace(str(MOONCAKE), limit=limit, load=load)
    result = simulate(
        truth,
        load_policy("weighted-score", truth, 0),
        draw_requests(trace, truth, 0),
        [r.arrival_s for r in trace],
        telemetry=TelemetryModel(10.0, seed=0),
        splitter=get_splitter("pd-threshold-blind"),
    )
    with out.open("w", encoding="utf-8") as handle:
        write_observations(handle, simulated_observations(result, truth))
    return load_observations(out, nominal)
