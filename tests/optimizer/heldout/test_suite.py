"""The held-out fleets: each loads, cites its sources, runs every shipped trace, and has its
three loads in the suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.arrivals import draw_requests
from optimizer.capacity import FleetCapacity, TokenMix, load_for_utilisation
from optimizer.decide.registry import get_policy
from optimizer.heldout.guard import heldout_files
from optimizer.heldout.suite import LOADS, cells, fleet_names, trace_names
from optimizer.report import build_report
from optimizer.sim import TelemetryModel, simulate
from optimizer.topology_files import load_topology
from optimizer.traces import SHIPPED_TRACES, load_trace

FILES = heldout_files()


def test_the_suite_has_at_least_five_fleets_and_every_shipped_trace() -> None:
    assert len(FILES) >= 5
    assert fleet_names() == [p.stem for p in FILES]
    assert set(trace_names()) == {
        p.name for p in SHIPPED_TRACES.iterdir() if p.suffix in (".csv", ".jsonl")
    }
    assert len(cells()) == 3 * len(FILES) * len(trace_names())
    # Loads the suite has no fleet or trace for would never run.
    assert {f for f, _ in LOADS} == set(fleet_names())
    assert {t for _, t in LOADS} == set(trace_names())


@pytest.mark.parametrize("pair", sorted(LOADS), ids="-".join)
def test_each_pair_has_a_light_a_moderate_and_a_heavy_load(pair: tuple[str, str]) -> None:
    light, moderate, heavy = LOADS[pair]
    assert light <= 0.3 < moderate < heavy


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_fleet_loads_and_cites_its_sources(path: Path) -> None:
    topology = load_topology(path)
    assert topology.nodes and topology.sources
    header = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line.lower())
    text = "\n".join(header)
    # Hand-made from public descriptions: hardware from datasheets, derived speeds, prices and
    # the network each say where they come from.
    for topic in ("datasheet", "profile", "price", "network", "slo"):
        assert topic in text, f"{path.name}: the header does not cite its {topic}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("trace", trace_names())
def test_every_shipped_trace_runs_on_every_fleet(path: Path, trace: str) -> None:
    topology = load_topology(path)
    head = load_trace(SHIPPED_TRACES / trace, limit=40)
    load = load_for_utilisation(FleetCapacity(topology), TokenMix.of(head), 0.25)
    scaled = load_trace(SHIPPED_TRACES / trace, limit=40, load=load)
    requests = draw_requests(scaled, topology, seed=0)
    result = simulate(
        topology,
        get_policy("weighted-score", topology),
        requests,
        [r.arrival_s for r in scaled],
        telemetry=TelemetryModel(10.0, seed=0),
    )
    report = build_report(result, topology, "weighted-score")
    # The workload's models are served somewhere every source reaches, within residency.
    assert report["rejected"] == 0 and report["served"] == 40
    assert report["residency_violations"] == 0
    assert report["slo_attainment"] > 0.8
