"""Serving capacity and capacity-relative load (optimizer.capacity, docs/learned-policy.md)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from optimizer.capacity import FleetCapacity, TokenMix, load_for_utilisation
from optimizer.cli import main
from optimizer.fleetgen import generate_fleet
from optimizer.rl.scenarios import ScenarioConfig, sample_scenario
from optimizer.topology_files import load_topology, parse_topology
from optimizer.traces import TraceRequest, load_trace
from tests.optimizer.fleets import FLEET_DEMO, MOONCAKE, TINY, tiny_topology

# 1,000 prompt and 100 output tokens. Big GPU: batch 4, steps of 10 + 4 x 1 ms, so a request
# takes 1000 / 10000 + 100 x 0.014 / 4 = 0.45 s; small GPU: batch 2, 20 + 2 x 2 ms, 0.5 +
# 100 x 0.024 / 2 = 1.7 s. TINY has two of each, all reachable from its source.
MIX = TokenMix(prompt_tokens=1000, output_tokens=100, requests_per_s=1.0)
BIG, SMALL = 1 / 0.45, 1 / 1.7


def test_capacity_is_the_sum_of_node_rates_computed_by_hand() -> None:
    capacity = FleetCapacity(tiny_topology())
    assert capacity.requests_per_s(MIX) == pytest.approx(2 * BIG + 2 * SMALL)


def test_cordoned_and_unreachable_nodes_do_not_count() -> None:
    data = copy.deepcopy(TINY)
    data["nodes"][0]["state"] = "cordoned"  # edge-s, small
    data["links"] = [lk for lk in data["links"] if "d-device" not in (lk["a"], lk["b"])]
    topology = parse_topology(yaml.safe_dump(data), "t.yaml")
    assert FleetCapacity(topology).requests_per_s(MIX) == pytest.approx(2 * BIG)


def test_kv_memory_caps_the_batch() -> None:
    # 8 GiB of KV on a small GPU at 1 kB a token holds two sequences of ~4.29M tokens, one of
    # 5M: the rate halves against the batch of two.
    capacity = FleetCapacity(tiny_topology(keep_nodes=("edge-s",)))
    rates = capacity.node_rates(5_000_000 - 100, 100).ravel()
    assert rates[0] == pytest.approx(1 / ((5_000_000 - 100) / 2000 + 100 * 0.022))


def test_a_shared_node_gives_its_time_to_the_model_that_needs_it() -> None:
    # n1 serves m1 and m2, n2 only m1, both at the same rate r, shares half and half: the
    # best split sends n1 entirely to m2 and serves 2r, where an even split serves 4r/3.
    data = copy.deepcopy(TINY)
    data["models"].append({"name": "m2", "memory_gib": 16, "kv_bytes_per_token": 1000})
    data["profiles"].append({**data["profiles"][0], "model": "m2"})
    data["nodes"] = [
        {**data["nodes"][1], "name": "n1", "models": ["m1", "m2"]},
        {**data["nodes"][2], "name": "n2", "models": ["m1"]},
    ]
    data["workload"] = {"models": [{"name": "m1", "share": 1}, {"name": "m2", "share": 1}]}
    topology = parse_topology(yaml.safe_dump(data), "t.yaml")
    assert FleetCapacity(topology).requests_per_s(MIX) == pytest.approx(2 * BIG, rel=0.02)


def test_a_workload_model_nobody_serves_leaves_no_capacity() -> None:
    data = copy.deepcopy(TINY)
    data["models"].append({"name": "m2", "memory_gib": 16, "kv_bytes_per_token": 1000})
    data["workload"] = {"models": [{"name": "m1", "share": 1}, {"name": "m2", "share": 1}]}
    capacity = FleetCapacity(parse_topology(yaml.safe_dump(data), "t.yaml"))
    assert capacity.requests_per_s(MIX) == 0.0
    with pytest.raises(ValueError, match="serves every model"):
        load_for_utilisation(capacity, MIX, 1.0)


@pytest.mark.parametrize(("nodes", "sites"), [(3, 2), (26, 9), (1000, 60)])
def test_scenarios_offer_the_drawn_utilisation_on_any_fleet_size(nodes: int, sites: int) -> None:
    topology = generate_fleet(nodes, sites, seed=1)
    trace = load_trace(MOONCAKE)
    capacity = FleetCapacity(topology)
    rng = np.random.default_rng(3)
    for utilisation in (0.3, 1.0, 2.5):
        config = ScenarioConfig(window=512, utilisation=(utilisation, utilisation))
        scenario = sample_scenario(trace, topology, config, rng, capacity)
        assert scenario.utilisation == pytest.approx(utilisation)
        requests = [
            TraceRequest(t, r.prompt_tokens, r.max_output_tokens, ())
            for t, r in zip(scenario.arrival_s, scenario.requests, strict=True)
        ]
        offered = TokenMix.of(requests)
        served = capacity.requests_per_s(offered)
        assert offered.requests_per_s / served == pytest.approx(utilisation, rel=1e-6)


def test_simulate_takes_a_utilisation_instead_of_a_load(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = ["simulate", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE)]
    args += ["--policy", "least-loaded", "--limit", "200", "--report", str(out)]
    assert main([*args, "--utilisation", "0.5"]) == 0
    report = json.loads(out.read_text())
    trace = load_trace(MOONCAKE, limit=200)
    expected = load_for_utilisation(
        FleetCapacity(load_topology(FLEET_DEMO)), TokenMix.of(trace), 0.5
    )
    assert report["utilisation"] == pytest.approx(0.5)
    assert report["load"] == pytest.approx(expected)


def test_load_and_utilisation_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE)]
    args += ["--policy", "random", "--load", "2", "--utilisation", "0.5"]
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
