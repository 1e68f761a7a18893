"""`--telemetry-interval`: policies see node state as the live engine does (LiveState fed by
delayed scrapes plus its own sends), in the simulator, the CLI and the Gymnasium env."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from optimizer.cli import main
from optimizer.decide.registry import get_policy
from optimizer.decide.state.fleet import D_QUEUE
from optimizer.rl.env import PlacementEnv
from optimizer.rl.scenarios import ScenarioConfig, sample_scenario
from optimizer.sim import Simulator, TelemetryModel
from optimizer.traces import TraceRequest
from tests.optimizer.fleets import FLEET_DEMO, MOONCAKE, request, tiny_topology


def _queues_seen(telemetry: TelemetryModel | None) -> list[float]:
    """Queue of the node each request was sent to, as the policy saw it at the request's
    arrival; requests 10 s apart, each long finished before the next."""
    topo = tiny_topology(keep_nodes=("core-l",))
    reqs = [request(topo, prompt=500, output=5) for _ in range(6)]
    sim = Simulator(
        topo,
        get_policy("least-loaded", topo),
        reqs,
        [10.0 * i for i in range(6)],
        telemetry=telemetry,
    )
    sim.start()
    seen = []
    while (rid := sim.advance()) is not None:
        candidates = sim.candidates(rid)
        seen.append(float(candidates.dynamic[0, D_QUEUE]))
        sim.send(rid, int(candidates.index[0]), sim.now)
    return seen


def test_exact_state_shows_an_empty_queue_once_requests_finish() -> None:
    assert _queues_seen(None) == [0.0] * 6


def test_with_a_long_interval_the_engine_only_counts_what_it_sent() -> None:
    # No scrape arrives in 1000 s: every earlier request still counts as queued.
    assert _queues_seen(TelemetryModel(1000.0)) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_with_a_short_interval_samples_replace_the_sent_counts() -> None:
    assert _queues_seen(TelemetryModel(2.0, seed=3)) == [0.0] * 6


def _simulate(tmp_path: Path, name: str, *extra: str) -> dict:  # type: ignore[type-arg]
    out = tmp_path / name
    args = ["simulate", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE)]
    args += ["--policy", "least-loaded", "--limit", "400", "--load", "4", "--report", str(out)]
    assert main([*args, *extra]) == 0
    return json.loads(out.read_text())


def test_simulate_takes_a_telemetry_interval_and_stale_state_changes_the_placements(
    tmp_path: Path,
) -> None:
    exact = _simulate(tmp_path, "exact.json")
    stale = _simulate(tmp_path, "stale.json", "--telemetry-interval", "10")
    again = _simulate(tmp_path, "again.json", "--telemetry-interval", "10")
    assert exact["telemetry_interval_s"] is None and stale["telemetry_interval_s"] == 10
    assert stale["per_node"] != exact["per_node"]
    assert stale["per_node"] == again["per_node"], "a seeded run is reproducible"


def test_a_bad_interval_is_refused_with_an_error() -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE),
              "--policy", "random", "--telemetry-interval", "-1"])  # fmt: skip


def _trace() -> list[TraceRequest]:
    rng = np.random.default_rng(1)
    t = np.cumsum(rng.exponential(0.05, size=300))
    return [TraceRequest(float(x), 1500, 50, (1, 2)) for x in t]


def test_training_scenarios_draw_the_interval_from_the_configured_range() -> None:
    topo = tiny_topology()
    config = ScenarioConfig(window=50, telemetry_interval_s=(5.0, 15.0))
    rng = np.random.default_rng(0)
    drawn = [sample_scenario(_trace(), topo, config, rng).telemetry_interval_s for _ in range(8)]
    assert all(i is not None and 5.0 <= i <= 15.0 for i in drawn)
    exact = sample_scenario(_trace(), topo, ScenarioConfig(window=50), np.random.default_rng(0))
    assert exact.telemetry_interval_s is None


def test_the_env_steps_on_telemetry_state() -> None:
    topo = tiny_topology()
    config = ScenarioConfig(window=120, telemetry_interval_s=(10.0, 10.0), cordon_probability=0)
    env = PlacementEnv(topo, _trace(), scenarios=config)
    obs, _ = env.reset(seed=0)
    assert env.sim is not None and env.sim.telemetry is not None
    steps = 0
    done = False
    while not done:
        obs, reward, _, done, _ = env.step(env.teacher_action())
        assert np.isfinite(obs).all() and np.isfinite(reward)
        steps += 1
    assert steps > 50


def test_evaluate_takes_a_telemetry_interval(tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    args = ["evaluate", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE), "--limit", "200"]
    args += ["--policies", "least-loaded,weighted-score", "--report", str(out)]
    assert main([*args, "--telemetry-interval", "10"]) == 0
    report = json.loads(out.read_text())
    assert report["telemetry_interval_s"] == 10
    assert set(report["policies"]) == {"least-loaded", "weighted-score"}
