"""The state one training run's phases share (`optimizer.rl.phases`): inputs, environments,
model, the best weights so far, the metrics history, and how validation replays are made and
summarised."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO

from optimizer.decide.scorers.learned import DECISION_COST_WEIGHT
from optimizer.rl.env import PlacementEnv
from optimizer.rl.export import export_scorer, write_policy_json
from optimizer.rl.fleets import MultiFleetEnv
from optimizer.rl.network import DeepSetsPolicy
from optimizer.rl.replays import MapFn, scenario_job
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from optimizer.traces import TraceRequest, load_trace

if TYPE_CHECKING:
    from optimizer.rl.train import ProgressFn, TrainConfig

COST_REFERENCE_WITHIN = 0.005
"""Attainment (a fraction) a heuristic may lose against the best one and still set the cost
bar (`reference_cost_per_1k`): issue #18's 0.5 point."""

# Share of the progress bar per phase, by rough wall time.
_PHASE_WEIGHTS = {"baselines": 0.05, "imitate": 0.15, "ppo": 0.65, "evaluate": 0.15}


@dataclasses.dataclass
class Best:
    """The best validated weights so far."""

    metrics: dict[str, float]
    state: dict[str, torch.Tensor]
    source: str


class Run:
    """Everything the phases share: inputs, environments, model, history and results."""

    def __init__(self, config: TrainConfig, progress: ProgressFn | None, map_replays: MapFn):
        self.config = config
        self.progress = progress
        self.map_replays = map_replays
        self.out = Path(config.out)
        self.paths = [config.topology, *config.extra_topologies]
        self.fleets: list[Topology] = [load_topology(p) for p in self.paths]
        self.trace: list[TraceRequest] = load_trace(config.trace)
        self.history: list[dict[str, Any]] = []
        self.baselines: dict[str, Any] = {}
        self.record: dict[str, Any] = {}
        self.best = Best({}, {}, "")
        # Decision cost weights the start is validated with, the first kept on a tie.
        self.cost_weights: tuple[float, ...] = (config.decision_cost_weight or 0.0,)
        self.started = time.perf_counter()
        weights = dict(_PHASE_WEIGHTS)
        if not config.eval_trace:
            weights["evaluate"] = 0.0
        self._weights = weights
        self._total = sum(weights.values())
        self.model: MaskablePPO
        self.policy: DeepSetsPolicy
        self.demo_env: PlacementEnv | MultiFleetEnv

    def report(self, phase: str, done: float, metrics: dict[str, Any]) -> None:
        """Record `metrics` of `phase` (`done` of it finished) and pass them to `progress`."""
        order = list(self._weights)
        offset = sum(self._weights[p] for p in order[: order.index(phase)])
        fraction = min(1.0, (offset + self._weights[phase] * min(done, 1.0)) / self._total)
        entry = {"phase": phase, "elapsed_s": round(time.perf_counter() - self.started, 2)}
        entry |= metrics
        self.history.append(entry)
        if self.progress is not None:
            self.progress(fraction, entry)

    def validation_jobs(self, policy: str) -> list[dict[str, Any]]:
        """One replay per validation fleet and utilisation, the same draws for every policy."""
        c = self.config
        return [
            scenario_job(
                topology=path,
                trace=c.trace,
                policy=policy,
                window=c.window,
                utilisation=u,
                scenario_seed=c.seed + 10_000 + 100 * f + i,
                policy_seed=c.seed,
                telemetry_interval_s=(
                    None if c.telemetry_interval_s is None else sum(c.telemetry_interval_s) / 2
                ),
            )
            for f, path in enumerate(self.paths[: max(1, c.validation_fleets)])
            for i, u in enumerate(c.validation_utilisations)
        ]

    def validate(self, policy: str) -> dict[str, float]:
        results = self.map_replays(self.validation_jobs(policy))
        return summarise(
            results,
            self.config,
            self.baselines.get("reference_ttft_mean_ms"),
            self.baselines.get("reference_cost_per_1k"),
        )

    def validate_actor(self, tag: str) -> dict[str, float]:
        """Validate the actor's current weights: exported beside the checkpoints, so that
        replays running in other processes load exactly these weights."""
        directory = self.out / "checkpoints" / "validation" / tag
        directory.mkdir(parents=True, exist_ok=True)
        export_scorer(self.policy, directory / "scorer.pt")
        weight = self.config.decision_cost_weight or 0.0
        write_policy_json(directory, {"name": f"validation-{tag}", DECISION_COST_WEIGHT: weight})
        return self.validate(str(directory))

    def validate_start(self) -> dict[str, float]:
        """Validate the start with each of `cost_weights` and keep the one with the best
        validation score: a fine-tune of the generalist prices cost for its own fleet, on its
        own validation replays (issue #18: its 0.5 kept the held-out bar on generated fleets
        but not everywhere). One weight: the plain validation of the start."""
        if len(self.cost_weights) == 1:
            self.config.decision_cost_weight = self.cost_weights[0]
            return self.validate_actor("start")
        trials = []
        for weight in self.cost_weights:
            self.config.decision_cost_weight = weight
            trials.append((weight, self.validate_actor(f"start-cost-{weight:g}")))
        weight, metrics = max(trials, key=lambda t: t[1]["validation_score"])
        self.config.decision_cost_weight = weight
        keys = ("slo_attainment", "ttft_p95_ms", "cost_per_1k_requests", "validation_score")
        self.record["decision_cost_weight_trials"] = [
            {"decision_cost_weight": w, **{k: m[k] for k in keys}} for w, m in trials
        ]
        return metrics

    def below_baseline(self) -> bool:
        best = self.baselines.get("best_heuristic", {})
        return bool(best) and self.best.metrics["slo_attainment"] < best["slo_attainment"]

    def finish(self, wall: float) -> None:
        self.record["wall_seconds"] = wall
        self.record["below_baseline"] = self.below_baseline()
        write_policy_json(self.out, self.record)


def reference_ttft_mean_ms(heuristics: list[list[dict[str, Any]]]) -> list[float]:
    """Per validation replay, the mean TTFT of the heuristic with the highest attainment on it
    (the lower mean TTFT among ties): the bar `ttft_mean_excess` measures against. `heuristics`
    holds each heuristic's results, replay by replay in the same order."""
    return _of_best(heuristics, "ttft_mean_ms")


def reference_cost_per_1k(
    heuristics: list[list[dict[str, Any]]], within: float = COST_REFERENCE_WITHIN
) -> list[float]:
    """Per validation replay, the lowest cost per 1k requests among the heuristics whose
    attainment is within `within` (a fraction) of the highest on it: the bar `cost_excess`
    measures against. Issue #18's live bar is the active heuristic's attainment, less 0.5
    point at most, at a lower cost per request; the best heuristic's own cost is no such bar
    (on training's validation the best, latency-first, is the dearest, and the shipped
    generalist was 7-15% dearer than weighted-score on the demo fleet at equal attainment)."""
    references = []
    for replay in zip(*heuristics, strict=True):
        best = max(r["slo_attainment"] for r in replay)
        references.append(
            min(r["cost_per_1k_requests"] for r in replay if r["slo_attainment"] >= best - within)
        )
    return references


def _of_best(heuristics: list[list[dict[str, Any]]], key: str) -> list[float]:
    return [
        min((-r["slo_attainment"], r[key]) for r in replay)[1]
        for replay in zip(*heuristics, strict=True)
    ]


def _log_excess(
    results: list[dict[str, Any]], key: str, reference: list[float] | None, floor: float
) -> float:
    """Mean over replays of max(0, log(ours / reference's)); 0 without a reference."""
    if reference is None:
        return 0.0
    return float(
        np.mean(
            [
                max(0.0, float(np.log(max(r[key], floor) / max(ref, floor))))
                for r, ref in zip(results, reference, strict=True)
            ]
        )
    )


def summarise(
    results: list[dict[str, Any]],
    config: TrainConfig,
    reference_ttft_mean_ms: list[float] | None = None,
    reference_cost_per_1k: list[float] | None = None,
) -> dict[str, float]:
    """Means over the validation replays; `log_ttft_p95_s` is the mean log of p95 TTFT in
    seconds (p95 spans seconds at light load to an hour in overload, and its log weighs a
    doubling the same at every load); `ttft_mean_excess` is how far the mean TTFT exceeds the
    best heuristic's on the same replay (`reference_ttft_mean_ms`, one per replay, from
    `measure_baselines`), as the mean of max(0, log(ours / theirs)), 0 when not given;
    `cost_excess` is the same for the cost per 1k requests (`reference_cost_per_1k`);
    `validation_score` is what picks the weights."""
    p95_s = [max(r["ttft_p95_ms"], 1.0) / 1000.0 for r in results]
    metrics = {
        "slo_attainment": float(np.mean([r["slo_attainment"] for r in results])),
        "ttft_p95_ms": float(np.mean([r["ttft_p95_ms"] for r in results])),
        "ttft_mean_ms": float(np.mean([r["ttft_mean_ms"] for r in results])),
        "cost_per_1k_requests": float(np.mean([r["cost_per_1k_requests"] for r in results])),
        "log_ttft_p95_s": float(np.mean(np.log(p95_s))),
        "ttft_mean_excess": _log_excess(results, "ttft_mean_ms", reference_ttft_mean_ms, 1.0),
        "cost_excess": _log_excess(results, "cost_per_1k_requests", reference_cost_per_1k, 1e-6),
        "load": float(np.mean([r["load"] for r in results])),
        "utilisation": float(np.mean([r["utilisation"] for r in results])),
    }
    metrics["validation_score"] = score(
        metrics,
        config.validation_p95_weight,
        config.validation_ttft_excess_weight,
        config.validation_cost_excess_weight,
    )
    return metrics


def score(
    metrics: dict[str, float],
    p95_weight: float,
    excess_weight: float = 0.0,
    cost_excess_weight: float = 0.0,
) -> float:
    """Attainment first, then `p95_weight` per unit of log p95 TTFT, `excess_weight` per unit
    of `ttft_mean_excess`, `cost_excess_weight` per unit of `cost_excess` and 0.1 point per
    USD per 1k. Attainment alone prefers parking hopeless requests on a node where they wait
    for minutes: the p95 TTFT (the tail users feel) and the mean TTFT above the best
    heuristic's (issue #18's bar: more attainment than the best heuristic at heavy load, at a
    mean TTFT no higher) forbid it. The cost above the best heuristic's: issue #18's live bar
    asks for a lower cost per request than the active heuristic, and 0.1 point per USD could
    not see a 10% premium (0.03 point on the demo fleet)."""
    return (
        metrics["slo_attainment"]
        - p95_weight * metrics["log_ttft_p95_s"]
        - excess_weight * metrics["ttft_mean_excess"]
        - cost_excess_weight * metrics.get("cost_excess", 0.0)
        - 0.001 * metrics["cost_per_1k_requests"]
    )
