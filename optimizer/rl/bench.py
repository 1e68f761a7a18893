"""Decision latency of a trained scorer next to the heuristics, on the same kernel candidates.

For 8, 64 and 256 candidates (the fleet's nodes that may serve its first source replicated
into a fleet of exactly that many, each with a random load: `optimizer.bench_decide`), it
times, single-threaded: the scorer alone on precomputed feature rows, through its numpy twin
and through the TorchScript module (`scorer.pt` as saved); the whole learned decision
(candidate columns, rows, scores: what the engine runs); and each heuristic's `score` on the
same candidates; and the whole decision through the pipeline (constraints filter, columns,
rows, scores, pick with 3 fallbacks). It prints p50/p99 in microseconds for those, the fastest
heuristic, and
latency-first and weighted-score (which compute the same estimates the rows carry).
`python -m optimizer bench-decide` compares whole decisions with the per-node reference.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch

from optimizer.bench_decide import _fleet_of, _state
from optimizer.decide.pipeline import Pipeline
from optimizer.decide.registry import POLICY_NAMES, get_filter, get_policy
from optimizer.decide.scorers.base import Policy
from optimizer.decide.scorers.learned import load_trained_policy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import Fleet
from optimizer.topology import Topology

SIZES: tuple[int, ...] = (8, 64, 256)


def _time(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    for _ in range(20):
        fn()
    samples = np.empty(repeats)
    for i in range(repeats):
        start = time.perf_counter_ns()
        fn()
        samples[i] = time.perf_counter_ns() - start
    p50, p99 = np.percentile(samples / 1000.0, [50, 99])
    return float(p50), float(p99)


def _score(policy: Policy, make: Callable[[], Candidates]) -> object:
    return policy.score(make())


def benchmark(topology: Topology, policy_dir: str | Path, repeats: int = 2000) -> str:
    """The benchmark table as text."""
    torch.set_num_threads(1)
    trained = load_trained_policy(policy_dir)
    rng = np.random.default_rng(0)
    lines = [f"{'candidates':>10}  {'what':<36}{'p50 µs':>10}{'p99 µs':>10}"]
    for n in SIZES:
        fleet_topology, request = _fleet_of(topology, n)
        fleet = Fleet(fleet_topology)
        dynamic, prefix = _state(fleet, fleet.model_index[request.model], rng)
        pipeline = Pipeline([get_filter("constraints")])
        candidates, trip = pipeline.candidates(fleet, request, dynamic, prefix)
        # The columns alone, on the filters' survivors: what the scorer rows are computed on.
        make = partial(Candidates, fleet, request, trip.index, dynamic, prefix, split=trip.split)
        rows = candidates.rows()
        decide = partial(pipeline.decide, fleet, request, dynamic, prefix, trained, 4)
        timings = {
            "scorer on rows (numpy twin)": _time(partial(trained.score_rows, rows), repeats),
            "scorer.pt on rows (TorchScript)": _time(
                partial(trained.score_rows_torch, rows), repeats
            ),
            "columns + rows + scorer": _time(partial(_score, trained, make), repeats),
            "pipeline: filters to pick (decision)": _time(decide, repeats),
        }
        for name in POLICY_NAMES:
            heuristic = get_policy(name, fleet_topology)
            timings[f"heuristic {name}"] = _time(partial(_score, heuristic, make), repeats)
        fastest = min((k for k in timings if k.startswith("heuristic")), key=lambda k: timings[k])
        shown = [k for k in timings if not k.startswith("heuristic")] + [fastest]
        shown += [
            h for h in ("heuristic latency-first", "heuristic weighted-score") if h != fastest
        ]
        for label in shown:
            p50, p99 = timings[label]
            lines.append(
                f"{n:>10}  {label + (' (fastest)' if label == fastest else ''):<36}"
                f"{p50:>10.1f}{p99:>10.1f}"
            )
    return "\n".join(lines)
