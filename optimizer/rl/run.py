"""The state one training run's phases share (`optimizer.rl.train` lists them): inputs,
environments, model, the best weights so far, the metrics history and the record that becomes
policy.json, and the validation replays' draws (`optimizer.rl.validation` runs and scores
them)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import torch
from sb3_contrib import MaskablePPO

from optimizer.rl.config import ProgressFn, TrainConfig
from optimizer.rl.env import PlacementEnv
from optimizer.rl.fleets import MultiFleetEnv
from optimizer.rl.network import DeepSetsPolicy
from optimizer.rl.replays import MapFn, scenario_job
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from optimizer.traces import TraceRequest, load_trace

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
        # The start's validation metrics, which a fine-tune's checkpoints must not fall below
        # (`optimizer.rl.fine_tune_guard`).
        self.start: dict[str, float] = {}
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

    def validation_jobs(
        self, policy: str, prompt_scale: float | None = None
    ) -> list[dict[str, Any]]:
        """One replay per validation fleet and utilisation, the same draws for every policy;
        `prompt_scale` fixes the factor on their prompt lengths (the fine-tune guard's
        long-prompt variant, `optimizer.rl.fine_tune_guard`)."""
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
                prompt_scale=prompt_scale,
                prompt_scale_range=c.prompt_scale,
            )
            for f, path in enumerate(self.paths[: max(1, c.validation_fleets)])
            for i, u in enumerate(c.validation_utilisations)
        ]

    def below_baseline(self) -> bool:
        best = self.baselines.get("best_heuristic", {})
        return bool(best) and self.best.metrics["slo_attainment"] < best["slo_attainment"]
