"""Training on small fleets: scenarios never take away every node able to serve, the environment
copes with arrivals (or whole episodes) without a candidate, and `train` runs from one node up."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from optimizer.cli import main
from optimizer.rl.env import PlacementEnv
from optimizer.rl.imitation import NoDecisionsError, collect
from optimizer.rl.scenarios import ScenarioConfig, _cordoned, sample_scenario
from optimizer.sim import ScheduledEvent
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from optimizer.traces import TraceRequest
from tests.conftest import CONTRACT_EXAMPLE
from tests.optimizer.fleets import FLEET_DEMO, TINY, tiny_topology

ALWAYS_CORDON = ScenarioConfig(window=64, cordon_probability=1.0)
NO_CORDON = ScenarioConfig(window=64, cordon_probability=0.0)


@pytest.fixture(scope="module")
def trace() -> list[TraceRequest]:
    rng = np.random.default_rng(11)
    t = np.cumsum(rng.exponential(0.5, size=200))
    return [
        TraceRequest(float(t[i]), int(rng.integers(100, 2000)), int(rng.integers(1, 100)), (i % 7,))
        for i in range(200)
    ]


@pytest.fixture
def trace_file(trace: list[TraceRequest], tmp_path: Path) -> Path:
    """`trace` as a Mooncake-style .jsonl file."""
    path = tmp_path / "trace.jsonl"
    rows = [
        {
            "timestamp": r.arrival_s * 1000,
            "input_length": r.prompt_tokens,
            "output_length": r.output_tokens,
            "hash_ids": list(r.hash_ids),
        }
        for r in trace
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _contract_variant(tmp_path: Path, name: str, keep: int, **node_changes: Any) -> Path:
    """The contract example (2 nodes) with only its last `keep` nodes, each changed by
    `node_changes`."""
    data = yaml.safe_load(CONTRACT_EXAMPLE.read_text())
    data["nodes"] = [{**n, **node_changes} for n in data["nodes"][-keep:]]
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _able(topology: Topology) -> set[str]:
    return {n.name for n in topology.nodes if n.state == "active"}


@pytest.mark.parametrize(
    ("keep", "sizes"),
    [
        (("core-l",), {0}),
        (("edge-s", "core-l"), {1}),
        (("edge-s", "core-l", "dev-s"), {1, 2}),
    ],
)
def test_cordons_always_leave_a_node_able_to_serve(keep: tuple[str, ...], sizes: set[int]) -> None:
    topology = tiny_topology(keep_nodes=keep)
    seen = set()
    for seed in range(200):
        names = _cordoned(topology, np.random.default_rng(seed))
        assert len(set(names)) == len(names) and set(names) <= set(keep)
        assert _able(topology) - set(names)
        seen.add(len(names))
    assert seen == sizes


def test_cordons_keep_a_serving_node_even_when_others_are_already_out() -> None:
    # Three nodes, two cordoned in the topology itself: the one active node is never cordoned.
    nodes = [
        n if n["name"] == "core-l" else {**n, "state": "cordoned"}
        for n in TINY["nodes"]
        if n["name"] in ("edge-s", "core-l", "cloud-l")
    ]
    topology = tiny_topology(nodes=nodes)
    assert _able(topology) == {"core-l"}
    for seed in range(100):
        assert "core-l" not in _cordoned(topology, np.random.default_rng(seed))


@pytest.mark.parametrize("fleet", [FLEET_DEMO, None])
def test_cordon_draws_are_unchanged_where_the_fleet_is_large_enough(fleet: Path | None) -> None:
    """Same picks and same generator state as the original `rng.choice` of 1 to 3 nodes, so
    training on fleet-demo (or any fleet of 4+ nodes) reproduces exactly."""
    topology = load_topology(fleet) if fleet else tiny_topology()
    names = [n.name for n in topology.nodes]
    for seed in range(200):
        old, new = np.random.default_rng(seed), np.random.default_rng(seed)
        expected = [str(n) for n in old.choice(names, size=int(old.integers(1, 4)), replace=False)]
        assert _cordoned(topology, new) == expected
        assert old.random() == new.random()


def _all_cordoned(topology: Topology, trace: list[TraceRequest]) -> PlacementEnv:
    scenario = sample_scenario(trace, topology, NO_CORDON, np.random.default_rng(0))
    events = [ScheduledEvent(0.0, n.name, "cordon") for n in topology.nodes]
    fixed = dataclasses.replace(scenario, events=events)
    return PlacementEnv(topology, trace, scenarios=NO_CORDON, fixed_scenario=fixed)


def test_env_ends_an_episode_in_which_no_arrival_has_a_candidate(
    trace: list[TraceRequest],
) -> None:
    env = _all_cordoned(tiny_topology(keep_nodes=("edge-s", "core-l")), trace)
    obs, info = env.reset(seed=0)
    assert not obs.any() and not env.action_masks().any()
    assert env.current == (None, None)
    assert info["misses"] == NO_CORDON.window  # every arrival rejected, charged as missed
    assert env.teacher_action() == 0
    obs, reward, terminated, truncated, _ = env.step(0)
    assert truncated and not terminated and reward == 0.0 and not obs.any()


def test_env_redraws_a_sampled_scenario_without_decisions(
    trace: list[TraceRequest], monkeypatch: pytest.MonkeyPatch
) -> None:
    import optimizer.rl.env as env_module

    topology = tiny_topology(keep_nodes=("edge-s", "core-l"))
    calls = [0]

    def first_cordons_everything(*args: Any) -> Any:
        calls[0] += 1
        scenario = sample_scenario(*args)
        if calls[0] == 1:
            events = [ScheduledEvent(0.0, n.name, "cordon") for n in topology.nodes]
            scenario = dataclasses.replace(scenario, events=events)
        return scenario

    monkeypatch.setattr(env_module, "sample_scenario", first_cordons_everything)
    env = PlacementEnv(topology, trace, scenarios=NO_CORDON)
    env.reset(seed=0)
    assert calls[0] == 2 and env.action_masks().any()
    done = False
    while not done:
        _, _, _, done, _ = env.step(env.teacher_action())


def test_collect_refuses_scenarios_without_any_decision(trace: list[TraceRequest]) -> None:
    env = _all_cordoned(tiny_topology(keep_nodes=("core-l",)), trace)
    with pytest.raises(NoDecisionsError, match="node_cordoned"):
        collect(env, 100, seed=0, gamma=0.99)


@pytest.mark.parametrize("keep", [2, 1], ids=["contract-example", "one-node"])
def test_train_command_writes_a_policy_on_small_fleets(
    keep: int,
    trace_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The real `train` entry point on the contract example (2 nodes) and on its fra-h100-1
    alone: scenarios used to cordon more nodes than exist, or all of them."""
    topology = CONTRACT_EXAMPLE if keep == 2 else _contract_variant(tmp_path, "one.yaml", 1)
    out = tmp_path / "run"
    code = main(
        [
            "train",
            "--topology",
            str(topology),
            "--trace",
            str(trace_file),
            "--timesteps",
            "1",  # one rollout
            "--bc-steps",
            "300",
            "--eval-trace",
            str(trace_file),
            "--eval-loads",
            "1",
            "--eval-seeds",
            "0",
            "--out",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.out + captured.err
    assert (out / "scorer.pt").is_file()
    meta = json.loads((out / "policy.json").read_text())
    assert meta["evaluation"]["loads"][0]["policy"]["slo_attainment"]["mean"] >= 0.0


def test_train_command_refuses_a_fleet_that_can_serve_nothing(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topology = _contract_variant(tmp_path, "cordoned.yaml", 1, state="cordoned")
    out = tmp_path / "run"
    argv = ["train", "--topology", str(topology), "--trace", str(trace_file), "--out", str(out)]
    assert main([*argv, "--timesteps", "1", "--bc-steps", "10"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "cannot train" in err and "node_cordoned" in err
    assert not (out / "scorer.pt").exists()
