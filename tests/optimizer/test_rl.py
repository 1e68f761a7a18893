"""The RL pipeline: environment contract, Deep Sets policy, imitation, export and loading."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_checker import check_env

from optimizer.cli import main
from optimizer.decide.registry import load_policy
from optimizer.decide.scorers.learned import load_trained_policy
from optimizer.decide.state.features import FEATURE_VERSION, N_FEATURES
from optimizer.errors import InputFileError
from optimizer.rl.config import TrainConfig
from optimizer.rl.env import PlacementEnv
from optimizer.rl.export import export_scorer, write_policy_json
from optimizer.rl.network import DeepSetsPolicy
from optimizer.rl.replays import run_replay, scenario_job
from optimizer.rl.scenarios import ScenarioConfig, sample_scenario
from optimizer.rl.train import train
from optimizer.sim.requests import SERVED
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from optimizer.traces import TraceRequest, load_trace
from tests.conftest import TOPOLOGIES, TRACES
from tests.optimizer.training import tiny_config

FLEET = TOPOLOGIES / "fleet-demo.yaml"
SMALL = ScenarioConfig(window=96)


@pytest.fixture(scope="module")
def fleet() -> Topology:
    return load_topology(FLEET)


@pytest.fixture(scope="module")
def trace() -> list[TraceRequest]:
    # A synthetic Poisson trace with a few shared prefixes, so tests need no shared data.
    rng = np.random.default_rng(7)
    t = np.cumsum(rng.exponential(0.2, size=600))
    return [
        TraceRequest(
            float(t[i]),
            int(rng.integers(200, 3000)),
            int(rng.integers(1, 300)),
            tuple(range(int(rng.integers(0, 5)) * 10, int(rng.integers(0, 5)) * 10 + 3)),
        )
        for i in range(600)
    ]


def _env(fleet: Topology, trace: list[TraceRequest]) -> PlacementEnv:
    return PlacementEnv(fleet, trace, scenarios=SMALL)


def _model(env: PlacementEnv, **kwargs: object) -> MaskablePPO:
    return MaskablePPO(
        DeepSetsPolicy,
        env,
        n_steps=64,
        batch_size=32,
        n_epochs=2,
        seed=0,
        device="cpu",
        policy_kwargs={"hidden": 16},
        **kwargs,  # type: ignore[arg-type]
    )


def test_env_passes_check_env(fleet: Topology, trace: list[TraceRequest]) -> None:
    with warnings.catch_warnings():
        # SB3 recommends flat observations; rows per candidate are the point here.
        warnings.filterwarnings("ignore", message=".*unconventional shape.*")
        check_env(_env(fleet, trace), warn=True)


def test_env_is_deterministic_for_a_seed(fleet: Topology, trace: list[TraceRequest]) -> None:
    def rollout(seed: int) -> tuple[list[np.ndarray], list[float]]:
        env = _env(fleet, trace)
        obs, _ = env.reset(seed=seed)
        observations, rewards = [obs], []
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(env.teacher_action())
            observations.append(obs)
            rewards.append(reward)
            done = terminated or truncated
        return observations, rewards

    obs_a, rew_a = rollout(3)
    obs_b, rew_b = rollout(3)
    obs_c, _ = rollout(4)
    assert len(obs_a) == len(obs_b)
    assert all(np.array_equal(a, b) for a, b in zip(obs_a, obs_b, strict=True))
    assert rew_a == rew_b
    assert len(obs_a) != len(obs_c) or not all(
        np.array_equal(a, c) for a, c in zip(obs_a, obs_c, strict=False)
    )


def test_env_masks_exactly_the_candidate_rows(fleet: Topology, trace: list[TraceRequest]) -> None:
    env = _env(fleet, trace)
    obs, _ = env.reset(seed=0)
    mask = env.action_masks()
    _, candidates = env.current
    assert mask.sum() == len(candidates) > 0
    assert np.array_equal(obs[:, N_FEATURES] > 0.5, mask)
    assert not obs[~mask].any()


def test_latency_reward_sums_to_the_time_requests_spend_in_the_system(
    fleet: Topology, trace: list[TraceRequest]
) -> None:
    env = PlacementEnv(fleet, trace, scenarios=SMALL)
    env.reset(seed=2)
    truncated = False
    while not truncated:
        _, _, _, truncated, _ = env.step(env.teacher_action())
    assert env.sim is not None
    table, now = env.sim.table, env.sim.now
    placed = [i for i, n in enumerate(table.node) if n >= 0]
    expected = sum(
        table.e2e[i] if table.status[i] == SERVED else now - table.arrival[i] for i in placed
    )
    out = env._out
    assert out.open_count == sum(1 for i in placed if table.status[i] != SERVED)
    assert out.finished_s + out.open_count * now - out.open_arrivals == pytest.approx(expected)


def test_episode_is_truncated_not_terminated(fleet: Topology, trace: list[TraceRequest]) -> None:
    env = _env(fleet, trace)
    env.reset(seed=1)
    terminated = truncated = False
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(env.teacher_action())
    assert truncated and not terminated


def test_policy_logits_follow_a_reordering_of_candidates(
    fleet: Topology, trace: list[TraceRequest]
) -> None:
    env = _env(fleet, trace)
    policy = _model(env).policy
    assert isinstance(policy, DeepSetsPolicy)
    obs, _ = env.reset(seed=0)
    n = int(env.action_masks().sum())
    perm = np.random.default_rng(0).permutation(n)
    shuffled = obs.copy()
    shuffled[:n] = obs[perm]
    with torch.no_grad():
        logits = policy.deep_sets.forward_actor(torch.as_tensor(obs)[None])[0, :n]
        permuted = policy.deep_sets.forward_actor(torch.as_tensor(shuffled)[None])[0, :n]
        value = policy.predict_values(torch.as_tensor(obs)[None])
        value_permuted = policy.predict_values(torch.as_tensor(shuffled)[None])
    assert torch.allclose(logits[perm], permuted, atol=1e-5)
    assert torch.allclose(value, value_permuted, atol=1e-5)


def test_every_parameter_changes_after_a_short_learn(
    fleet: Topology, trace: list[TraceRequest]
) -> None:
    model = _model(_env(fleet, trace), learning_rate=1e-3)
    before = {k: v.detach().clone() for k, v in model.policy.named_parameters()}
    optimised = {id(p) for group in model.policy.optimizer.param_groups for p in group["params"]}
    assert all(id(p) in optimised for p in model.policy.parameters())
    model.learn(total_timesteps=128)
    unchanged = [k for k, v in model.policy.named_parameters() if torch.equal(v, before[k])]
    assert unchanged == []


def test_exported_scorer_matches_the_policys_deterministic_choice(
    fleet: Topology, trace: list[TraceRequest], tmp_path: Path
) -> None:
    env = _env(fleet, trace)
    model = _model(env, learning_rate=1e-3)
    model.learn(total_timesteps=128)
    policy = model.policy
    assert isinstance(policy, DeepSetsPolicy)
    export_scorer(policy, tmp_path / "scorer.pt")
    scorer = torch.jit.load(str(tmp_path / "scorer.pt"))
    obs, _ = env.reset(seed=5)
    checked = 0
    for _ in range(200):
        mask = env.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=True)
        n = int(mask.sum())
        with torch.no_grad():
            scores = scorer(torch.as_tensor(obs[:n, :N_FEATURES]), torch.ones(n, dtype=torch.bool))
        assert int(torch.argmax(scores)) == int(action)
        # Any number of rows, masked rows -inf.
        padded = torch.as_tensor(obs[:, :N_FEATURES])
        with torch.no_grad():
            full = scorer(padded, torch.as_tensor(mask))
        assert torch.isinf(full[~torch.as_tensor(mask)]).all()
        assert int(torch.argmax(full)) == int(action)
        checked += 1
        obs, _, _, truncated, _ = env.step(int(action))
        if truncated:
            obs, _ = env.reset(seed=6 + checked)
    assert checked == 200


def test_load_policy_refuses_another_feature_version(
    fleet: Topology, trace: list[TraceRequest], tmp_path: Path
) -> None:
    policy = _model(_env(fleet, trace)).policy
    assert isinstance(policy, DeepSetsPolicy)
    export_scorer(policy, tmp_path / "scorer.pt")
    write_policy_json(tmp_path, {"name": "t"})
    assert load_policy(str(tmp_path), fleet).name == "t"
    data = json.loads((tmp_path / "policy.json").read_text())
    data["feature_version"] = FEATURE_VERSION + 1
    (tmp_path / "policy.json").write_text(json.dumps(data))
    with pytest.raises(InputFileError, match="feature version"):
        load_policy(str(tmp_path), fleet)


def _write_trace(trace: list[TraceRequest], path: Path) -> Path:
    """`trace` as a Mooncake JSONL file, the form `train` reads."""
    path.write_text(
        "".join(
            json.dumps(
                {
                    "timestamp": r.arrival_s * 1000,
                    "input_length": r.prompt_tokens,
                    "output_length": r.output_tokens,
                    "hash_ids": list(r.hash_ids),
                }
            )
            + "\n"
            for r in trace
        )
    )
    return path


def test_train_api_runs_a_tiny_budget_and_reports_progress(
    trace: list[TraceRequest], tmp_path: Path
) -> None:
    trace_path = _write_trace(trace, tmp_path / "trace.jsonl")
    seen: list[tuple[float, str]] = []
    config = tiny_config(
        FLEET,
        trace_path,
        tmp_path / "run",
        eval_trace=str(trace_path),
        eval_loads=(1.0,),
        eval_seeds=(0,),
        decision_cost_weight=0.25,
    )
    result = train(config, lambda fraction, message: seen.append((fraction, message)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and 0.99 <= fractions[-1] <= 1.0
    meta = json.loads((result.out / "policy.json").read_text())
    assert meta["feature_version"] == FEATURE_VERSION
    assert meta["training_config"]["timesteps"] == 256
    assert meta["evaluation"]["loads"][0]["best_heuristic"]["name"]
    validations = [m for _, m in seen if m.get("event") == "validation"]
    assert validations and all("ttft_mean_excess" in m for m in validations)
    assert len(meta["validation"]["baselines"]["reference_ttft_mean_ms"]) == 1
    loaded = load_trained_policy(result.out)
    # Served, and validated, with the decision cost weight it was given.
    assert meta["decision_cost_weight"] == 0.25 and loaded.cost_weight == 0.25
    start = load_trained_policy(result.out / "checkpoints" / "validation" / "start")
    assert start.cost_weight == 0.25
    # A fine-tune from it tries its weight and 0 on the start and keeps the better one.
    tuned = train(
        dataclasses.replace(
            config,
            out=str(tmp_path / "tuned"),
            init=str(result.out),
            eval_trace=None,
            decision_cost_weight=None,
        )
    )
    tuned_meta = json.loads((tuned.out / "policy.json").read_text())
    trials = tuned_meta["decision_cost_weight_trials"]
    assert [t["decision_cost_weight"] for t in trials] == [0.25, 0.0]
    best = max(trials, key=lambda t: t["validation_score"])
    assert tuned_meta["decision_cost_weight"] == best["decision_cost_weight"]
    assert load_trained_policy(tuned.out).cost_weight == best["decision_cost_weight"]
    trace_rows = load_trace(trace_path, limit=5)
    assert len(trace_rows) == 5 and loaded.meta["seed"] == 0


# What two runs of one config may differ in: wall-clock figures and where they wrote.
_WALL_CLOCK = {"wall_seconds", "elapsed_s", "steps_per_s", "out"}


def _without_wall_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_wall_clock(v) for k, v in value.items() if k not in _WALL_CLOCK}
    if isinstance(value, list):
        return [_without_wall_clock(v) for v in value]
    return value


def test_the_same_config_and_seed_train_the_same_artifact(
    trace: list[TraceRequest], tmp_path: Path
) -> None:
    """cleanrl's promise, kept by the phases of `train`: one config and seed, one artifact.
    Two PPO rollouts of 512 steps, so the validation at 1024 scores weights PPO updated."""
    config = tiny_config(
        FLEET,
        _write_trace(trace, tmp_path / "trace.jsonl"),
        tmp_path / "first" / "run",
        timesteps=1024,
        validate_every=512,
        seed=3,
    )
    first = train(config)
    second = train(dataclasses.replace(config, out=str(tmp_path / "second" / "run")))
    generator = torch.Generator().manual_seed(0)
    rows = torch.randn(40, N_FEATURES, generator=generator)
    mask = torch.rand(40, generator=generator) > 0.2
    scorers = ("scorer.pt", "checkpoints/validation/start/scorer.pt")
    scorers += ("checkpoints/validation/1024/scorer.pt",)
    for scorer in scorers:
        a = torch.jit.load(str(first.out / scorer))(rows, mask)
        b = torch.jit.load(str(second.out / scorer))(rows, mask)
        assert torch.equal(a, b), scorer
    ppo_updated = torch.jit.load(str(first.out / scorers[2]))(rows, mask)
    assert not torch.equal(ppo_updated, torch.jit.load(str(first.out / scorers[1]))(rows, mask))
    meta = [json.loads((r.out / "policy.json").read_text()) for r in (first, second)]
    assert _without_wall_clock(meta[0]) == _without_wall_clock(meta[1])
    assert _without_wall_clock(first.history) == _without_wall_clock(second.history)


@pytest.mark.slow
# The goal allows 15 minutes of training; the suite's default timeout is 300 s.
@pytest.mark.timeout(20 * 60)
# A known regression, strict so that a fix shows up as XPASS and this mark goes: since the
# teacher's fallback weighs the estimated TTFT (for stale telemetry, issue #18), training on
# fleet-demo reaches only 76.5-77.1% at 3.5x against prefix-aware's 76.97%. Measured
# 2026-11-24 with exact-state training (`telemetry_interval_s=None`): 77.10% with this
# teacher, 77.12% with the old validation score, 84.32% with the old fallback (most free KV
# alone, `FALLBACK_TTFT_WEIGHT = 0`), which passes every assertion below. Evaluating this
# test's policy with 10 s telemetry instead (as it is trained) does not rescue it (2026-11-25,
# 810 s of training): heavy 69.5% against prefix-aware's 67.0%, moderate 97.3% against
# weighted-score's 96.7% at 1.17x its cost.
@pytest.mark.xfail(
    strict=True,
    reason="the teacher's TTFT-weighted fallback (issue #18) costs fleet-demo training its "
    "heavy-load margin; docs/results/learned-policy.md",
)
def test_shipped_training_command_beats_the_best_heuristic(tmp_path: Path) -> None:
    """The issue's goal, end to end (~10 min on 2 cores): train on Azure, evaluate on Mooncake
    at the default loads, 1x (moderate) and 3.5x (heavy; docs/results/learned-policy.md)."""
    traces = TRACES
    config = TrainConfig(
        topology=str(FLEET),
        trace=str(traces / "azure_llm_2023_conv.csv"),
        out=str(tmp_path / "ppo"),
        eval_trace=str(traces / "mooncake_synthetic.jsonl"),
    )
    assert config.eval_loads == (1.0, 3.5)
    result = train(config)
    assert result.evaluation is not None
    moderate, heavy = result.evaluation["loads"]
    best, ours = moderate["best_heuristic"], moderate["policy"]
    assert best["slo_attainment"]["mean"] >= 0.95
    assert ours["slo_attainment"]["mean"] >= best["slo_attainment"]["mean"] - 0.005
    assert ours["cost_per_1k_requests"]["mean"] <= best["cost_per_1k_requests"]["mean"]
    best, ours = heavy["best_heuristic"], heavy["policy"]
    assert best["slo_attainment"]["mean"] < 0.85
    assert ours["slo_attainment"]["mean"] >= best["slo_attainment"]["mean"] + 0.05
    assert ours["ttft_p95_ms"]["mean"] < best["ttft_p95_ms"]["mean"]
    assert result.wall_seconds < 15 * 60


@pytest.mark.parametrize("factor", [1.0, 3.0])
def test_the_prompt_scale_range_sets_the_factor_on_episode_prompts(
    fleet: Topology, trace: list[TraceRequest], factor: float
) -> None:
    config = dataclasses.replace(SMALL, prompt_scale=(factor, factor))
    scenario = sample_scenario(trace, fleet, config, np.random.default_rng(3))
    assert scenario.prompt_scale == pytest.approx(factor)
    prompts = sorted(r.prompt_tokens for r in scenario.requests)
    originals = sorted(int(r.prompt_tokens * scenario.prompt_scale) for r in trace)
    assert set(prompts) <= set(originals)


def test_validation_replays_draw_from_the_runs_prompt_scale_range(tmp_path: Path) -> None:
    def job(prompt_scale: tuple[float, float] | None) -> dict[str, Any]:
        return scenario_job(
            topology=str(FLEET),
            trace=str(TRACES / "azure_llm_2023_conv.csv"),
            policy="least-loaded",
            window=200,
            utilisation=0.9,
            scenario_seed=10_000,
            prompt_scale_range=prompt_scale,
        )

    default, short = run_replay(job(None)), run_replay(job((1.0, 1.0)))
    # The same utilisation of the fleet's capacity: shorter prompts arrive faster.
    assert short["utilisation"] == default["utilisation"] == pytest.approx(0.9)
    assert short["load"] > 1.5 * default["load"]


def test_train_refuses_a_prompt_scale_range_upside_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["train", "--topology", str(FLEET), "--trace", str(TRACES / "azure_llm_2023_conv.csv")]
    assert main([*args, "--prompt-scale", "3", "2", "--out", str(tmp_path / "p")]) == 2
    assert "--prompt-scale LOW HIGH needs LOW <= HIGH, got 3 2" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()
