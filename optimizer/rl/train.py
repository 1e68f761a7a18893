"""Train a placement policy. Reads top to bottom, as cleanrl's ppo.py does: the arguments are
one dataclass (`optimizer.rl.config.TrainConfig`), the libraries are seeded here, and `train`
runs the named phases in order, one module each:

    seed_everything(config)               # random, numpy, torch (and torch's threads)
    run = setup(config, ...)              # 1. optimizer.rl.setup: fleets, trace, envs, model
    measure_baselines(run)                # 2. optimizer.rl.baselines: teacher and heuristics
    imitate(run)                          # 3. optimizer.rl.warm_start: clone the teacher or --init
    ppo(run)                              # 4. optimizer.rl.ppo: updates, validating as it goes
    export(run)                           # 5. optimizer.rl.export: best weights -> scorer.pt
    evaluate(run)                         # 6. optimizer.rl.evaluate: held-out trace (optional)

The phases share one `optimizer.rl.run.Run` (inputs, model, best weights, history, the
policy.json record); selection on validation (replays, metrics, score) is
`optimizer.rl.validation`. Progress is `progress(fraction, metrics)` with named metrics
(docs/learned-policy.md lists them): `phase`, and per phase `timesteps`, `steps_per_s`,
`approx_kl`, validation's `slo_attainment`, `ttft_p95_ms`, `ttft_mean_excess`,
`cost_per_1k_requests`, `validation_score`, and the `teacher_attainment` and
`best_heuristic_attainment` baselines. Validation replays are plain jobs
(`optimizer.rl.replays`) handed to `map_replays`, so the console fans them out over its Celery
workers; the CLI runs them inline.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from optimizer.rl.baselines import measure_baselines
from optimizer.rl.config import ProgressFn, TrainConfig
from optimizer.rl.evaluate import evaluate
from optimizer.rl.export import export, write_policy_json
from optimizer.rl.ppo import ppo
from optimizer.rl.replays import MapFn, inline_map
from optimizer.rl.setup import setup
from optimizer.rl.warm_start import imitate


@dataclass(frozen=True)
class TrainResult:
    """What `train` produced."""

    out: Path
    """The directory holding scorer.pt and policy.json."""
    validation: dict[str, float]
    """Validation metrics of the exported weights."""
    baselines: dict[str, Any]
    """Validation metrics of the teacher and of the best heuristic (`best_heuristic` names it)."""
    below_baseline: bool
    """Whether the exported weights validate below the best heuristic's SLO attainment."""
    evaluation: dict[str, Any] | None
    """The held-out evaluation record (as in policy.json), if run."""
    history: list[dict[str, Any]]
    """Every progress record, in order (the learning curve)."""
    wall_seconds: float
    """Wall time of the whole run."""


def seed_everything(config: TrainConfig) -> None:
    """Seed Python's, numpy's and torch's generators with `config.seed` (the environments and
    PPO take it too, in `setup`), and set torch's threads: the same config and seed give the
    same artifact."""
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)


def train(
    config: TrainConfig,
    progress: ProgressFn | None = None,
    map_replays: MapFn = inline_map,
) -> TrainResult:
    """Run every phase in order; `progress(fraction, metrics)` is called as it goes and
    `map_replays` runs validation and evaluation replays (inline by default)."""
    started = time.perf_counter()
    seed_everything(config)
    run = setup(config, progress, map_replays)
    measure_baselines(run)
    imitate(run)
    ppo(run)
    export(run)
    evaluation = evaluate(run)
    wall = time.perf_counter() - started
    # policy.json once more, with the wall time and the verdict against the baselines.
    run.record["wall_seconds"] = wall
    run.record["below_baseline"] = run.below_baseline()
    write_policy_json(run.out, run.record)
    return TrainResult(
        out=run.out,
        validation=run.best.metrics,
        baselines=run.baselines,
        below_baseline=run.below_baseline(),
        evaluation=evaluation,
        history=run.history,
        wall_seconds=wall,
    )
