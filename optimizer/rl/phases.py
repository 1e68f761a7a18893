"""The phases of `optimizer.rl.train.train`, each a function of the shared `Run` state.

`setup` (`optimizer.rl.setup`) builds everything (fleets, environments, MaskablePPO; the
shared state is `optimizer.rl.run.Run`); `measure_baselines` replays the teacher and every
heuristic on the validation scenarios; `imitate` warm-starts the actor (behaviour cloning,
or the weights of `--init`); `ppo` improves it, validating as it goes and
keeping the best weights; `export` writes them; `evaluate` replays the held-out trace. Every
phase reports named metrics through `Run.report` (docs/learned-policy.md, training).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from stable_baselines3.common.callbacks import BaseCallback

from optimizer.decide.registry import POLICY_NAMES, resolve_policy_dir
from optimizer.decide.scorers.learned import DECISION_COST_WEIGHT
from optimizer.decide.state.features import FEATURE_VERSION
from optimizer.rl.evaluate import collect_evaluation, evaluation_jobs, format_evaluation
from optimizer.rl.export import export_scorer, load_weights, save_weights, write_policy_json
from optimizer.rl.imitation import NoDecisionsError, clone, collect, fit_normalisation
from optimizer.rl.network import DeepSetsPolicy
from optimizer.rl.run import Best, Run, reference_cost_per_1k, reference_ttft_mean_ms, summarise
from optimizer.rl.setup import unservable

if TYPE_CHECKING:
    pass


def measure_baselines(run: Run) -> None:
    """The teacher and every heuristic on the validation scenarios: the learning curve's
    reference lines, and the bar a run must clear to be registered without an override."""
    names = list(dict.fromkeys([run.config.teacher, *POLICY_NAMES]))
    per_policy = len(run.validation_jobs(names[0]))
    jobs = [job for name in names for job in run.validation_jobs(name)]
    results = run.map_replays(jobs)
    by_policy = {
        name: results[i * per_policy : (i + 1) * per_policy] for i, name in enumerate(names)
    }
    heuristics = [by_policy[n] for n in POLICY_NAMES]
    reference = reference_ttft_mean_ms(heuristics)
    reference_cost = reference_cost_per_1k(heuristics)
    metrics = {
        name: summarise(rows, run.config, reference, reference_cost)
        for name, rows in by_policy.items()
    }
    best = max(
        POLICY_NAMES,
        key=lambda n: (metrics[n]["slo_attainment"], -metrics[n]["cost_per_1k_requests"]),
    )
    run.baselines = {
        "teacher": {"name": run.config.teacher, **metrics[run.config.teacher]},
        "best_heuristic": {"name": best, **metrics[best]},
        "heuristics": {n: metrics[n] for n in POLICY_NAMES},
        "reference_ttft_mean_ms": reference,
        "reference_cost_per_1k": reference_cost,
    }
    run.report(
        "baselines",
        1.0,
        {
            "teacher_attainment": metrics[run.config.teacher]["slo_attainment"],
            "best_heuristic": best,
            "best_heuristic_attainment": metrics[best]["slo_attainment"],
            "best_heuristic_ttft_p95_ms": metrics[best]["ttft_p95_ms"],
            "best_heuristic_ttft_mean_ms": metrics[best]["ttft_mean_ms"],
            "validation_utilisations": list(run.config.validation_utilisations),
            "validation_load": metrics[best]["load"],
        },
    )


def _copy_state(policy: DeepSetsPolicy) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in policy.deep_sets.actor.state_dict().items()}


def _validation_entry(run: Run, metrics: dict[str, float], steps: int, best: bool) -> None:
    run.report(
        "ppo" if steps else "imitate",
        min(steps / max(run.config.timesteps, 1), 1.0) if steps else 1.0,
        {
            "event": "validation",
            "timesteps": steps,
            **metrics,
            "teacher_attainment": run.baselines["teacher"]["slo_attainment"],
            "best_heuristic_attainment": run.baselines["best_heuristic"]["slo_attainment"],
            "decision_cost_weight": run.config.decision_cost_weight or 0.0,
            "best": best,
        },
    )


def imitate(run: Run) -> None:
    """Warm start: load `--init`'s weights, or clone the teacher; then validate the start."""
    c = run.config
    deep_sets = run.policy.deep_sets

    def demonstrations(steps: int, tick: Callable[[int], None] | None = None) -> Any:
        try:
            return collect(run.demo_env, steps, c.seed + 20_000, c.gamma, tick)
        except NoDecisionsError as exc:
            raise unservable(c, c.topology, str(exc)) from exc

    metrics: dict[str, Any] = {}
    if c.init:
        weights = load_weights(resolve_policy_dir(c.init))
        deep_sets.actor.load_state_dict(weights["actor"])
        deep_sets.critic.load_state_dict(weights["critic"])
        run.policy.value_net.load_state_dict(weights["value_net"])
        source = f"init:{c.init}"
    elif c.bc_steps:
        count = [0]

        def tick(n: int) -> None:
            count[0] += n
            if count[0] % 4096 == 0:
                run.report("imitate", 0.8 * count[0] / c.bc_steps, {"collected": count[0]})

        demos = demonstrations(c.bc_steps, tick)
        deep_sets.set_normalisation(*fit_normalisation(demos))
        metrics = clone(run.policy, demos, epochs=c.bc_epochs, seed=c.seed)
        source = "imitation"
    else:
        deep_sets.set_normalisation(*fit_normalisation(demonstrations(4096)))
        source = "init"
    start = run.validate_start()
    run.best = Best(start, _copy_state(run.policy), source)
    run.record["imitation"] = metrics
    _validation_entry(run, start | {"bc_agreement": metrics.get("bc_agreement", 0.0)}, 0, True)


class _Monitor(BaseCallback):
    """Logs PPO's own metrics each rollout; validates and checkpoints every `every` steps."""

    def __init__(self, run: Run) -> None:
        super().__init__()
        self.run = run
        self.last_validation = 0
        self._clock = (time.perf_counter(), 0)

    def _on_rollout_start(self) -> None:
        values = self.model.logger.name_to_value
        now, steps = time.perf_counter(), self.num_timesteps
        if steps:
            self.run.report(
                "ppo",
                steps / max(self.run.config.timesteps, 1),
                {
                    "timesteps": steps,
                    "steps_per_s": (steps - self._clock[1]) / max(now - self._clock[0], 1e-9),
                    "approx_kl": float(values.get("train/approx_kl", 0.0)),
                    "clip_fraction": float(values.get("train/clip_fraction", 0.0)),
                    "entropy_loss": float(values.get("train/entropy_loss", 0.0)),
                    "value_loss": float(values.get("train/value_loss", 0.0)),
                },
            )
        self._clock = (now, steps)

    def _on_step(self) -> bool:
        steps = self.num_timesteps
        if steps - self.last_validation >= self.run.config.validate_every:
            self.last_validation = steps
            self.model.save(self.run.out / "checkpoints" / "latest.zip")
            _validate_and_keep(self.run, steps, f"ppo@{steps}")
        return True


def _validate_and_keep(run: Run, steps: int, source: str) -> None:
    metrics = run.validate_actor(str(steps))
    improved = metrics["validation_score"] > run.best.metrics["validation_score"]
    if improved:
        run.best = Best(metrics, _copy_state(run.policy), source)
    _validation_entry(run, metrics, max(steps, 1), improved)


def ppo(run: Run) -> None:
    """MaskablePPO from the warm start, validating every `validate_every` steps; the best
    validated weights (by `validation_score`) are kept."""
    if run.config.timesteps:
        monitor = _Monitor(run)
        run.model.learn(total_timesteps=run.config.timesteps, callback=monitor)
        steps = run.model.num_timesteps
        if steps != monitor.last_validation:
            _validate_and_keep(run, steps, "ppo@final")
    run.policy.deep_sets.actor.load_state_dict(run.best.state)
    run.model.save(run.out / "checkpoints" / "final.zip")


def export(run: Run) -> None:
    """scorer.pt (TorchScript, for serving), weights.pt (for `--init` fine-tuning) and
    policy.json with the training config, validation history and baselines."""
    c = run.config
    export_scorer(run.policy, run.out / "scorer.pt")
    save_weights(run.policy, c.hidden, run.out / "weights.pt")
    actor = run.policy.deep_sets.actor
    run.record |= {
        "name": run.out.name,
        "normalisation": {
            "shift": actor.get_buffer("shift").tolist(),
            "scale": actor.get_buffer("scale").tolist(),
            "applied_inside_scorer": True,
        },
        "training_config": _jsonable(dataclasses.asdict(c)),
        "seed": c.seed,
        "selected_weights": run.best.source,
        "validation": {
            "baselines": run.baselines,
            "selected": run.best.metrics,
            "history": [h for h in run.history if h.get("event") == "validation"],
        },
        "feature_version_trained": FEATURE_VERSION,
        DECISION_COST_WEIGHT: c.decision_cost_weight or 0.0,
    }
    write_policy_json(run.out, run.record)


def evaluate(run: Run) -> dict[str, Any] | None:
    """The exported scorer and every heuristic on the held-out trace at each load and seed."""
    c = run.config
    if not c.eval_trace:
        return None
    jobs = evaluation_jobs(
        topology=c.topology,
        trace=c.eval_trace,
        policy=str(run.out),
        loads=c.eval_loads,
        seeds=c.eval_seeds,
    )
    run.report("evaluate", 0.0, {"replays": len(jobs)})
    record = collect_evaluation(jobs, run.map_replays(jobs), str(run.out), Path(c.eval_trace).name)
    run.record["evaluation"] = record
    run.record["evaluation_table"] = format_evaluation(record).splitlines()
    run.report("evaluate", 1.0, {"replays": len(jobs)})
    return record


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
