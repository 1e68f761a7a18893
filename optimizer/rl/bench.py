"""Decision latency of a trained scorer next to the heuristics, on the same candidates.

For 8, 64 and 256 candidates (the fleet's serving nodes tiled, each with random load), it
times, single-threaded: the scorer alone on precomputed rows, the whole learned decision
(`candidate_rows` then the scorer, what `TrainedPolicy.scores` does) and each heuristic's
`scores` on the same views, and prints p50/p99 in microseconds for the scorer, the fastest
heuristic, and latency-first and weighted-score (which compute the same estimates).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch

from optimizer.constraints import filter_candidates
from optimizer.decision import NodeView, node_view, placement_request
from optimizer.features import candidate_rows
from optimizer.policies import POLICY_NAMES, get_policy
from optimizer.rl.export import load_trained_policy
from optimizer.topology import Topology

SIZES: tuple[int, ...] = (8, 64, 256)


def _candidates(topology: Topology, n: int, rng: np.random.Generator) -> list[NodeView]:
    model = topology.models[0].name
    source = topology.sources[0] if topology.sources else None
    site = source.site if source else topology.sites[0].name
    request = placement_request(
        topology, model=model, source_site=site, slo=None, prompt_tokens=2000, max_output_tokens=200
    )
    views = [node_view(topology, node.name, model) for node in topology.nodes]
    base, _ = filter_candidates(request, views, topology)
    out = []
    for i in range(n):
        view = base[i % len(base)]
        out.append(
            dataclasses.replace(
                view,
                queue_depth=int(rng.integers(0, 20)),
                running=int(rng.integers(0, view.max_batch + 1)),
                kv_used_bytes=int(rng.uniform(0, 0.9) * view.kv_capacity_bytes),
            )
        )
    return out


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


def benchmark(topology: Topology, policy_dir: str | Path, repeats: int = 2000) -> str:
    """The benchmark table as text."""
    torch.set_num_threads(1)
    trained = load_trained_policy(policy_dir)
    rng = np.random.default_rng(0)
    model = topology.models[0].name
    site = topology.sources[0].site if topology.sources else topology.sites[0].name
    request = placement_request(
        topology, model=model, source_site=site, slo=None, prompt_tokens=2000, max_output_tokens=200
    )
    lines = [f"{'candidates':>10}  {'what':<32}{'p50 µs':>10}{'p99 µs':>10}"]
    for n in SIZES:
        views = _candidates(topology, n, rng)
        rows = candidate_rows(request, views, topology)
        rows_t = torch.from_numpy(rows)
        mask = torch.ones(n, dtype=torch.bool)

        def scorer_only(rows_t: torch.Tensor = rows_t, mask: torch.Tensor = mask) -> object:
            with torch.no_grad():
                return trained.module(rows_t, mask)

        timings = {
            "scorer.pt on rows": _time(scorer_only, repeats),
            "rows + scorer.pt (TrainedPolicy)": _time(
                partial(trained.scores, request, views, topology), repeats
            ),
        }
        for name in POLICY_NAMES:
            heuristic = get_policy(name, topology)
            timings[f"heuristic {name}"] = _time(
                partial(heuristic.scores, request, views, topology), repeats
            )
        fastest = min((k for k in timings if k.startswith("heuristic")), key=lambda k: timings[k])
        # The fastest heuristic (load-blind ones are trivially fast), and the two that compute
        # the same estimates the rows carry.
        shown = ["scorer.pt on rows", "rows + scorer.pt (TrainedPolicy)", fastest]
        shown += [
            h for h in ("heuristic latency-first", "heuristic weighted-score") if h != fastest
        ]
        for label in shown:
            p50, p99 = timings[label]
            lines.append(
                f"{n:>10}  {label + (' (fastest)' if label == fastest else ''):<32}"
                f"{p50:>10.1f}{p99:>10.1f}"
            )
    return "\n".join(lines)
