"""Train a placement policy: behaviour cloning of a teacher rule, then MaskablePPO, then export.

Read top to bottom (cleanrl style): the arguments are one dataclass with a docstring per field;
`train` seeds everything, builds the environments, warm-starts the Deep Sets actor-critic by
imitating the teacher (`optimizer.rl.teacher`), improves it with MaskablePPO (sb3-contrib)
while validating and checkpointing periodically, keeps the best validated weights (SLO
attainment, p95 TTFT and cost on held-back draws), exports `scorer.pt`, and
evaluates the result against every heuristic on a held-out trace, writing it all into
`policy.json`. The console's Celery task calls `train(config, progress)`; the CLI wraps it.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv

from optimizer.errors import InputFileError
from optimizer.features import FEATURE_VERSION
from optimizer.kernel.candidates import Candidates
from optimizer.policies import POLICY_NAMES, Policy
from optimizer.report import build_report
from optimizer.rl.env import PlacementEnv, RewardConfig
from optimizer.rl.evaluate import evaluate_policy, evaluation_record, format_evaluation
from optimizer.rl.export import export_scorer, load_trained_policy, write_policy_json
from optimizer.rl.imitation import (
    Demonstrations,
    NoDecisionsError,
    clone,
    collect,
    fit_normalisation,
)
from optimizer.rl.network import CandidateScorer, DeepSetsPolicy
from optimizer.rl.scenarios import Scenario, ScenarioConfig, sample_scenario
from optimizer.rl.teacher import SLO_AWARE, TEACHER_NAMES, get_teacher
from optimizer.sim import Simulator, simulate
from optimizer.topology import Topology, load_topology
from optimizer.traces import TraceRequest, draw_requests, load_trace

ProgressFn = Callable[[float, str], None]


@dataclass
class TrainConfig:
    """Everything a training run depends on; recorded in policy.json."""

    topology: str
    """Topology YAML the policy is trained (and evaluated) on."""
    trace: str
    """Training trace (Azure .csv or Mooncake .jsonl); episodes are windows of it."""
    out: str
    """Output directory: scorer.pt, policy.json, checkpoints/."""
    timesteps: int = 500_000
    """PPO environment steps (one step = one placement decision)."""
    seed: int = 0
    """Seed of torch, numpy, the environments' scenarios and PPO."""
    teacher: str = SLO_AWARE
    """Rule imitated by the warm start: the private SLO-aware teacher (`optimizer.rl.teacher`)
    or a built-in heuristic's name."""
    bc_steps: int = 100_000
    """Teacher decisions collected for the warm start (0 skips it)."""
    bc_epochs: int = 15
    """Passes over the demonstrations. 60k decisions x 6 epochs reached 73.5% agreement with
    the SLO-aware teacher, and a clone whose held-out p95 TTFT at 3.5x was 3x the teacher's;
    100k x 15 reach 81.5% and the teacher's p95."""
    n_envs: int = 8
    """Parallel environments (in-process vector env)."""
    n_steps: int = 256
    """Steps per environment per PPO rollout."""
    batch_size: int = 512
    """PPO minibatch size."""
    n_epochs: int = 4
    """PPO epochs per rollout (the update dominates the wall time; docs/architecture.md)."""
    learning_rate: float = 1e-4
    """Adam step size for PPO (small: it fine-tunes a cloned policy)."""
    gamma: float = 0.995
    """Discount per decision (~200 decisions of horizon: outcomes land tens of seconds later)."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.1
    """PPO clip range (tight, to stay near the warm start)."""
    ent_coef: float = 0.001
    """Entropy bonus."""
    hidden: int = 64
    """Width of the per-candidate MLPs."""
    window: int = 4096
    """Arrivals per training episode."""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """Weights of the reward's terms."""
    validate_every: int = 20_000
    """PPO steps between validations (and checkpoints)."""
    validation_pressures: tuple[float, ...] = (10.0, 33.0, 60.0)
    """Pressures (load x prompt scale) of the validation scenarios, light to heavy: fixed
    draws from the training trace (seed + 10000), one per pressure. The Azure trace at
    pressure p carries the prefill work per second of the Mooncake trace at about p / 9.4
    times its load, so these stand for ~1x, ~3.5x and ~6.4x Mooncake."""
    validation_p95_weight: float = 0.02
    """Attainment given up per unit of mean log p95 TTFT when validation picks the weights
    (0.02: a doubled p95 TTFT costs ~1.4 points)."""
    eval_trace: str | None = None
    """Held-out trace for the final evaluation (None skips it)."""
    eval_loads: tuple[float, ...] = (1.0, 3.5)
    """Loads of the held-out evaluation."""
    eval_seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds of the held-out evaluation (they change source and model draws)."""
    threads: int = 1
    """torch threads during training (1: these tiny matrices run slower on more threads)."""


@dataclass(frozen=True)
class TrainResult:
    """What `train` produced."""

    out: Path
    """The directory holding scorer.pt and policy.json."""
    validation: dict[str, float]
    """Validation metrics of the exported weights."""
    evaluation: dict[str, Any] | None
    """The held-out evaluation record (as in policy.json), if run."""
    wall_seconds: float
    """Wall time of the whole run."""


class ActorPolicy(Policy):
    """An in-training actor used as a simulator Policy (same rows as the exported scorer)."""

    def __init__(self, scorer: CandidateScorer, name: str = "ppo") -> None:
        self.scorer = scorer
        self.name = name

    def score(self, c: Candidates) -> np.ndarray:
        rows = torch.from_numpy(c.rows()).unsqueeze(0)
        mask = torch.ones(rows.shape[:2], dtype=torch.bool)
        with torch.no_grad():
            return self.scorer(rows, mask).squeeze(0).numpy().astype(np.float64)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _validate(topology: Topology, policy: Policy, scenarios: list[Scenario]) -> dict[str, float]:
    """Means over the validation scenarios (full replays) of SLO attainment, cost per 1k, and
    the log of p95 TTFT in seconds: p95 spans seconds at light load to an hour in overload, and
    its log weighs a doubling the same at every load."""
    att, cost, p95 = [], [], []
    for s in scenarios:
        result = simulate(topology, policy, s.requests, s.arrival_s, events=s.events)
        report = build_report(result, topology, policy.name)
        att.append(report["slo_attainment"])
        cost.append(report["cost_per_1k_requests"])
        p95.append(max(report["ttft_ms"]["p95"], 1.0) / 1000.0)
    return {
        "slo_attainment": float(np.mean(att)),
        "cost_per_1k_requests": float(np.mean(cost)),
        "log_ttft_p95_s": float(np.mean(np.log(p95))),
    }


def _unservable(config: TrainConfig, detail: str) -> InputFileError:
    """The error for a (valid) topology on which the trace offers no decision to learn."""
    return InputFileError(
        config.topology,
        [
            f"{config.topology}: cannot train on {config.trace}: {detail}; check the nodes' "
            "models and states, the links, and the residency of the sources' SLOs"
        ],
    )


def _check_servable(config: TrainConfig, topology: Topology, trace: list[TraceRequest]) -> None:
    """Refuse at once a topology on which none of the trace's first `window` requests (with
    sources and models drawn with the run's seed) has a candidate node: training would see no
    decision. Stops at the first request that has one."""
    items = trace[: config.window]
    requests = draw_requests(items, topology, config.seed)
    teacher = get_teacher(config.teacher, topology)
    sim = Simulator(topology, teacher, requests, [r.arrival_s for r in items])
    if any(sim.candidates(rid) for rid in range(len(requests))):
        return
    reasons = ", ".join(sorted(sim.reject_reasons))
    raise _unservable(
        config, f"no node can serve any of its first {len(requests)} requests ({reasons})"
    )


def _score(metrics: dict[str, float], p95_weight: float) -> float:
    """Validation objective: attainment first, then `p95_weight` per unit of log p95 TTFT and
    0.1 point per USD per 1k. Attainment alone prefers parking hopeless requests on a node
    where they wait for minutes, which the p95 TTFT (the tail users feel) forbids."""
    return (
        metrics["slo_attainment"]
        - p95_weight * metrics["log_ttft_p95_s"]
        - 0.001 * metrics["cost_per_1k_requests"]
    )


class _Monitor(BaseCallback):
    """Reports progress, validates and checkpoints every `every` steps, keeps the best."""

    def __init__(
        self,
        every: int,
        validate: Callable[[], dict[str, float]],
        checkpoints: Path,
        report: Callable[[int, str], None],
        best: dict[str, Any],
        p95_weight: float,
    ) -> None:
        super().__init__()
        self.every = every
        self.validate = validate
        self.checkpoints = checkpoints
        self.report = report
        self.best = best
        self.p95_weight = p95_weight
        self._last = 0

    def _on_step(self) -> bool:
        steps = self.num_timesteps
        self.report(steps, "ppo")
        if steps - self._last >= self.every:
            self._last = steps
            metrics = self.validate()
            # One rolling checkpoint (resume with MaskablePPO.load); the best weights are kept
            # in memory and exported at the end.
            self.model.save(self.checkpoints / "latest.zip")
            improved = _score(metrics, self.p95_weight) > _score(
                self.best["metrics"], self.p95_weight
            )
            if improved:
                policy = self.model.policy
                assert isinstance(policy, DeepSetsPolicy)
                self.best.update(metrics=metrics, state=_copy_state(policy), source=f"ppo@{steps}")
            self.report(
                steps,
                f"validation at {steps}: attainment {metrics['slo_attainment']:.2%}, "
                f"log p95 TTFT {metrics['log_ttft_p95_s']:.2f}, "
                f"$/1k {metrics['cost_per_1k_requests']:.3f}" + (" (best)" if improved else ""),
            )
        return True


def _copy_state(policy: DeepSetsPolicy) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in policy.deep_sets.actor.state_dict().items()}


def train(config: TrainConfig, progress: ProgressFn | None = None) -> TrainResult:
    """Run the whole pipeline; `progress(fraction, message)` is called as it goes."""
    started = time.perf_counter()
    if config.teacher not in TEACHER_NAMES:
        raise ValueError(f"unknown teacher {config.teacher!r}; one of {', '.join(TEACHER_NAMES)}")
    _seed_everything(config.seed)
    torch.set_num_threads(config.threads)
    out = Path(config.out)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    topology = load_topology(config.topology)
    trace = load_trace(config.trace)
    _check_servable(config, topology, trace)
    scenario_config = ScenarioConfig(window=config.window)

    # Progress: imitation, PPO and the final evaluation, weighted by rough wall time.
    eval_runs = len(config.eval_loads) * len(config.eval_seeds) if config.eval_trace else 0
    phases = {
        "bc": 0.15 if config.bc_steps else 0.0,
        "ppo": 0.7,
        "eval": 0.15 if eval_runs else 0.0,
    }
    total = sum(phases.values())

    def report(phase: str, done: float, message: str) -> None:
        if progress is None:
            return
        offset = {"bc": 0.0, "ppo": phases["bc"], "eval": phases["bc"] + phases["ppo"]}[phase]
        # PPO collects whole rollouts, so its step count may overshoot the budget a little.
        progress(min(1.0, (offset + phases[phase] * min(done, 1.0)) / total), message)

    def make_env(rank: int) -> Callable[[], PlacementEnv]:
        def build() -> PlacementEnv:
            env = PlacementEnv(
                topology,
                trace,
                scenarios=scenario_config,
                reward=config.reward,
                teacher=config.teacher,
            )
            env.reset(seed=config.seed * 1000 + rank)
            return env

        return build

    venv = DummyVecEnv([make_env(i) for i in range(config.n_envs)])
    venv.seed(config.seed)
    model = MaskablePPO(
        DeepSetsPolicy,
        venv,
        learning_rate=config.learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        policy_kwargs={"hidden": config.hidden},
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    policy = model.policy
    assert isinstance(policy, DeepSetsPolicy)

    # Validation scenarios: fixed draws from the training trace, never from the held-out one.
    val_rng = np.random.default_rng(config.seed + 10_000)
    val_scenarios = [
        sample_scenario(
            trace,
            topology,
            dataclasses.replace(scenario_config, pressure=(pressure, pressure)),
            val_rng,
        )
        for pressure in config.validation_pressures
    ]

    def validate() -> dict[str, float]:
        return _validate(topology, ActorPolicy(policy.deep_sets.actor), val_scenarios)

    # 1. Warm start by behaviour cloning of the teacher.
    bc_metrics: dict[str, float] = {}
    demo_env = make_env(10_000)()

    def demonstrations(steps: int, tick: Callable[[int], None] | None = None) -> Demonstrations:
        try:
            return collect(demo_env, steps, config.seed + 20_000, config.gamma, tick)
        except NoDecisionsError as exc:
            # Requests that fit unscaled but no longer do in training scenarios (for example
            # prompts scaled past every node's KV room): nothing to learn either.
            raise _unservable(config, str(exc)) from exc

    if config.bc_steps:
        count = [0]

        def tick(n: int) -> None:
            count[0] += n
            if count[0] % 2048 == 0:
                report("bc", 0.8 * count[0] / config.bc_steps, "imitation: collecting")

        demos = demonstrations(config.bc_steps, tick)
        policy.deep_sets.set_normalisation(*fit_normalisation(demos))
        bc_metrics = clone(policy, demos, epochs=config.bc_epochs, seed=config.seed)
        report("bc", 1.0, f"imitation: agreement {bc_metrics['bc_agreement']:.1%}")
    else:
        demos = demonstrations(4096)
        policy.deep_sets.set_normalisation(*fit_normalisation(demos))
    teacher_metrics = _validate(topology, get_teacher(config.teacher, topology), val_scenarios)
    start_metrics = validate()
    best: dict[str, Any] = {
        "metrics": start_metrics,
        "state": _copy_state(policy),
        "source": "imitation" if config.bc_steps else "init",
    }
    report(
        "ppo",
        0.0,
        f"validation: teacher {teacher_metrics['slo_attainment']:.2%}, "
        f"start {start_metrics['slo_attainment']:.2%}",
    )

    # 2. Improve with MaskablePPO, validating and checkpointing as it goes.
    history: list[dict[str, Any]] = []

    def ppo_report(steps: int, message: str) -> None:
        if message != "ppo":
            history.append({"timesteps": steps, "message": message})
        if message != "ppo" or steps % 1024 == 0:
            report("ppo", steps / max(config.timesteps, 1), message)

    if config.timesteps:
        monitor = _Monitor(
            config.validate_every,
            validate,
            out / "checkpoints",
            ppo_report,
            best,
            config.validation_p95_weight,
        )
        model.learn(total_timesteps=config.timesteps, callback=monitor)
        final = validate()
        if _score(final, config.validation_p95_weight) > _score(
            best["metrics"], config.validation_p95_weight
        ):
            best.update(metrics=final, state=_copy_state(policy), source="ppo@final")
    policy.deep_sets.actor.load_state_dict(best["state"])
    model.save(out / "checkpoints" / "final.zip")

    # 3. Export the scorer and the policy record.
    export_scorer(policy, out / "scorer.pt")
    record: dict[str, Any] = {
        "name": out.name,
        "normalisation": {
            "shift": policy.deep_sets.actor.get_buffer("shift").tolist(),
            "scale": policy.deep_sets.actor.get_buffer("scale").tolist(),
            "applied_inside_scorer": True,
        },
        "training_config": _jsonable(dataclasses.asdict(config)),
        "seed": config.seed,
        "selected_weights": best["source"],
        "imitation": bc_metrics,
        "validation": {
            "teacher": {"name": config.teacher, **teacher_metrics},
            "start": start_metrics,
            "selected": best["metrics"],
            "history": history,
        },
    }
    write_policy_json(out, record)

    # 4. Held-out evaluation against every heuristic, with the exported scorer.
    evaluation = None
    if config.eval_trace:
        done = [0]
        per_run = len(POLICY_NAMES) + 1

        def eval_tick(message: str) -> None:
            done[0] += 1
            report("eval", done[0] / (eval_runs * per_run), message)

        results = evaluate_policy(
            topology,
            config.eval_trace,
            lambda: load_trained_policy(out),
            name=out.name,
            loads=config.eval_loads,
            seeds=config.eval_seeds,
            progress=eval_tick,
        )
        evaluation = evaluation_record(results, out.name, Path(config.eval_trace).name)
        record["evaluation"] = evaluation
        record["evaluation_table"] = format_evaluation(evaluation).splitlines()
    wall = time.perf_counter() - started
    record["wall_seconds"] = wall
    record["feature_version_trained"] = FEATURE_VERSION
    write_policy_json(out, record)
    return TrainResult(out, best["metrics"], evaluation, wall)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
