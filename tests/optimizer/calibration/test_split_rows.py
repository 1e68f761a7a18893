"""Calibration of link bandwidth from split requests' KV transfers (issue #30), with a known
truth: a P/D fleet whose edge links really carry half their nominal bandwidth.

The fleet is the EU half of `pd-two-regions.yaml` without the core's decode node and one of
its mixed nodes, so long prompts prefilled at the core mostly decode at the edges and their KV
crosses the edge links. The traffic's split stage is the bandwidth-blind one
(`pd-threshold-blind`): it splits whatever the links' bandwidth, so both edge links carry
hundreds of transfers. Light load (utilisation 0.3), as queue-dominated TTFT rows are left out
of the fit (design.QUEUE_SHARE)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from optimizer.arrivals import draw_requests
from optimizer.calibration import calibrate
from optimizer.calibration.design import Layout, Routes, accumulate
from optimizer.calibration.fit import solve
from optimizer.calibration.replay import all_active, replay
from optimizer.calibration.run import parameters
from optimizer.calibration.split_rows import split_samples
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


def _fleet(factor: float = 1.0) -> Topology:
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


def _observe(nominal: Topology, truth: Topology, out: Path, limit: int = 2000) -> Observations:
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


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Topology, Topology, Observations]:
    nominal, truth = _fleet(), _fleet(BANDWIDTH_FACTOR)
    path = tmp_path_factory.mktemp("split") / "obs.jsonl"
    return nominal, truth, _observe(nominal, truth, path)


def test_the_true_bandwidths_are_a_fixed_point_of_replay_and_solve(
    observed: tuple[Topology, Topology, Observations],
) -> None:
    """The split rows are exact: replaying at the truth and solving gives the truth back."""
    nominal, truth, observations = observed
    nominal, truth = all_active(nominal), all_active(truth)
    _, crossed = split_samples(nominal, observations, np.ones(len(observations), dtype=bool))
    transfers = tuple(int(i) for i in np.flatnonzero(crossed >= 50))
    assert len(transfers) == 2  # both edge links
    layout = Layout(profiles=len(nominal.profiles), links=(), transfers=transfers)
    theta = parameters(truth, (), transfers)
    routes = Routes(nominal, observations, layout)
    eq = accumulate(truth, replay(truth, observations), observations, theta, layout, routes)
    step = solve(eq, theta, np.ones(layout.size, dtype=bool), np.zeros(layout.size))
    assert np.allclose(step.z, 1.0, atol=1e-4)
    assert step.rss < 1e-6 * eq.rows


def test_it_recovers_the_bandwidth_and_leaves_the_profiles_where_they_are(
    observed: tuple[Topology, Topology, Observations],
) -> None:
    nominal, truth, observations = observed
    result = calibrate(nominal, observations)
    report = result.report
    assert report["verdict"]["verdict"] == "improved"
    bandwidths = {
        (link["a"], link["b"]): link["values"]["bandwidth_gbps"]
        for link in report["links"]
        if "bandwidth_gbps" in link["values"]
    }
    assert set(bandwidths) == {("muc-edge", "fra-core"), ("ams-edge", "fra-core")}
    true_gbps = {(lk.a, lk.b): lk.bandwidth_gbps for lk in truth.links}
    for pair, value in bandwidths.items():
        assert value["status"] == "fitted" and value["samples"] >= 50
        assert value["nominal"] == 10
        assert value["fitted"] == pytest.approx(true_gbps[pair], rel=0.10)
        low, high = value["interval"]
        assert low <= value["fitted"] <= high
        # The calibrated fleet carries the fitted bandwidth.
        link = result.topology.link(*pair)
        assert link is not None and link.bandwidth_gbps == value["fitted"]
    # The truth's profiles are the nominal ones: none moves by more than 10%.
    for entry in report["profiles"]:
        for value in entry["values"].values():
            assert value["fitted"] == pytest.approx(value["nominal"], rel=0.10)
    # The link joining the two edges carried no KV: it has no bandwidth entry, and keeps its own.
    edges = result.topology.link("muc-edge", "ams-edge")
    assert edges is not None and edges.bandwidth_gbps == 10


def test_a_file_without_split_requests_takes_the_old_path(
    observed: tuple[Topology, Topology, Observations],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Observations without `prefill_node` are calibrated as before split requests existed:
    no transfer is fitted, no split row is read, and no link reports a bandwidth."""
    nominal, _, observations = observed
    unsplit = tmp_path / "unsplit.jsonl"
    source = Path(observations.path).read_text().splitlines()
    unsplit.write_text("".join(line + "\n" for line in source if "prefill_node" not in line))
    loaded = load_observations(unsplit, nominal)
    assert all(p is None for p in loaded.prefill_node)

    def no_split_rows(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("split rows read from a file without split requests")

    monkeypatch.setattr("optimizer.calibration.design.add_split_rows", no_split_rows)
    report = calibrate(nominal, loaded).report
    assert all(set(link["values"]) == {"rtt_ms"} for link in report["links"])
