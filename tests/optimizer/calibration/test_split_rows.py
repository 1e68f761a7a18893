"""Calibration of link bandwidth from split requests' KV transfers (issue #30), with a known
truth: a P/D fleet whose edge links really carry half their nominal bandwidth, and traffic
split over them by the bandwidth-blind split stage (`split_truth.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from optimizer.calibration import calibrate
from optimizer.calibration.design import Layout, Routes, accumulate
from optimizer.calibration.fit import solve
from optimizer.calibration.replay import all_active, replay
from optimizer.calibration.split_rows import split_samples
from optimizer.calibration.theta import parameters
from optimizer.observations import Observations, load_observations
from optimizer.topology import Topology
from tests.optimizer.calibration.split_truth import BANDWIDTH_FACTOR, observe, pd_eu_fleet


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Topology, Topology, Observations]:
    nominal, truth = pd_eu_fleet(), pd_eu_fleet(BANDWIDTH_FACTOR)
    path = tmp_path_factory.mktemp("split") / "obs.jsonl"
    return nominal, truth, observe(nominal, truth, path)


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
