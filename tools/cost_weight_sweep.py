"""A trained policy's attainment and cost for several `decision_cost_weight`s, on a set of
fleets, utilisations and seeds, against every heuristic on the same arrivals.

    .venv/bin/python -m tools.cost_weight_sweep \
        --fleets v300.yaml,v301.yaml,v302.yaml --trace azure_x8.csv --limit 1500 \
        --utilisations 0.5,1.5,2.5 --seeds 0,1,2 --weights 0,0.1,0.3,0.5,1,2 \
        [--policy generalist] [--telemetry-interval 10] [--workers 2]

How the generalist's weight was chosen (docs/learned-policy.md, "The decision cost weight"):
on the validation set above, never on the held-out fleets. For each weight, the policy's files
are copied into a temporary directory with that weight in policy.json, so every replay loads
the policy the way `evaluate` and the console do (`optimizer.rl.replays.trace_job`). Prints,
per cell and weight, the attainment minus the best heuristic's (points, mean over seeds) and
the cost per request as a ratio of weighted-score's, then the means (the cost ratio as a
geometric mean). Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import fmean

import numpy as np

from optimizer import argtypes
from optimizer.capacity import FleetCapacity, TokenMix, load_for_utilisation
from optimizer.decide.registry import POLICY_NAMES, resolve_policy_dir
from optimizer.decide.scorers.learned import DECISION_COST_WEIGHT
from optimizer.rl.replays import run_replay, trace_job
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace
from tools.validation_set import best_heuristic, cell_means


def _weights(text: str) -> list[float]:
    return [argtypes.non_negative(v) for v in text.split(",") if v.strip()]


def _variant(source: Path, root: Path, weight: float) -> str:
    out = root / f"w{weight:g}"
    out.mkdir()
    for name in ("scorer.pt", "policy.json"):
        shutil.copy(source / name, out / name)
    record = json.loads((out / "policy.json").read_text(encoding="utf-8"))
    record[DECISION_COST_WEIGHT] = weight
    (out / "policy.json").write_text(json.dumps(record), encoding="utf-8")
    return str(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fleets", type=argtypes.names, required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--limit", type=argtypes.count, default=None)
    ap.add_argument("--utilisations", type=argtypes.positives, required=True)
    ap.add_argument("--seeds", type=argtypes.naturals, default=[0, 1, 2])
    ap.add_argument("--weights", type=_weights, required=True)
    ap.add_argument("--policy", default="generalist")
    ap.add_argument("--telemetry-interval", type=argtypes.positive, default=10.0)
    ap.add_argument("--workers", type=argtypes.count, default=2)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        source = resolve_policy_dir(args.policy)
        variants = {w: _variant(source, Path(tmp), w) for w in args.weights}
        specs = [*variants.values(), *POLICY_NAMES]
        mix = TokenMix.of(load_trace(args.trace, limit=args.limit))
        capacity = {f: FleetCapacity(load_topology(f)) for f in args.fleets}
        cells = [(f, u, s) for f in args.fleets for u in args.utilisations for s in args.seeds]
        jobs = [
            trace_job(
                topology=f,
                trace=args.trace,
                policy=spec,
                load=load_for_utilisation(capacity[f], mix, u),
                seed=s,
                limit=args.limit,
                telemetry_interval_s=args.telemetry_interval,
            )
            | {"utilisation": u}
            for f, u, s in cells
            for spec in specs
        ]
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(run_replay, jobs, chunksize=4))

    gaps: dict[float, list[float]] = defaultdict(list)
    ratios: dict[float, list[float]] = defaultdict(list)
    print("fleet, U  | " + " | ".join(f"w={w:g}" for w in args.weights) + " | best heuristic")
    metrics = ("slo_attainment", "cost_per_1k_requests")
    for (_, fleet, u), mean in cell_means(jobs, results, metrics).items():
        best = best_heuristic(mean)
        cells_out = []
        for w, spec in variants.items():
            gap = 100 * (mean[spec][0] - mean[best][0])
            ratio = mean[spec][1] / mean["weighted-score"][1]
            gaps[w].append(gap)
            ratios[w].append(ratio)
            cells_out.append(f"{gap:+.2f} pt, {ratio:.2f}x")
        print(f"{fleet} {u:g} | " + " | ".join(cells_out) + f" | {best} {100 * mean[best][0]:.2f}%")
    print(
        "mean      | "
        + " | ".join(
            f"{fmean(gaps[w]):+.2f} pt, {np.exp(fmean(np.log(ratios[w]))):.3f}x"
            for w in args.weights
        )
    )
    print("(attainment minus the best heuristic's; cost per request over weighted-score's)")


if __name__ == "__main__":
    main()
