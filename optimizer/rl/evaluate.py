"""Held-out evaluation of a trained policy against every built-in heuristic and the oracle.

For each load and seed, the held-out trace is replayed once per policy on the same arrivals
(sources and models drawn with the seed, docs/contracts.md §2), and the policy's SLO attainment, p95
TTFT and cost per 1k requests are set against those of the best heuristic for that load (the
one with the highest mean attainment over the seeds) and the oracle's limit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from optimizer.oracle import oracle_report
from optimizer.policies import POLICY_NAMES, Policy, get_policy
from optimizer.report import build_report
from optimizer.sim import simulate
from optimizer.topology import Topology
from optimizer.traces import draw_requests, load_trace

METRICS: tuple[str, ...] = ("slo_attainment", "ttft_p95_ms", "cost_per_1k_requests")


@dataclass(frozen=True, slots=True)
class LoadResult:
    """Per-policy metric lists (one value per seed) at one load, plus the oracle's."""

    load: float
    seeds: list[int]
    runs: dict[str, dict[str, list[float]]]
    oracle_attainment: list[float]

    def mean(self, policy: str, metric: str) -> float:
        return float(np.mean(self.runs[policy][metric]))

    def best_heuristic(self) -> str:
        """The heuristic with the highest mean attainment (ties: lower cost)."""
        heuristics = [p for p in self.runs if p in POLICY_NAMES]
        return max(
            heuristics,
            key=lambda p: (
                self.mean(p, "slo_attainment"),
                -self.mean(p, "cost_per_1k_requests"),
            ),
        )

    def summary(self, policy: str) -> dict[str, Any]:
        """Mean and standard deviation over seeds of each metric of `policy`."""
        out: dict[str, Any] = {}
        for metric in METRICS:
            values = self.runs[policy][metric]
            out[metric] = {"mean": float(np.mean(values)), "std": float(np.std(values))}
        return out


def _metrics(report: dict[str, Any]) -> dict[str, float]:
    return {
        "slo_attainment": report["slo_attainment"],
        "ttft_p95_ms": report["ttft_ms"]["p95"],
        "cost_per_1k_requests": report["cost_per_1k_requests"],
    }


def evaluate_policy(
    topology: Topology,
    trace_path: str | Path,
    make_policy: Callable[[], Policy],
    *,
    name: str,
    loads: Sequence[float],
    seeds: Sequence[int],
    heuristics: Sequence[str] = POLICY_NAMES,
    progress: Callable[[str], None] | None = None,
) -> list[LoadResult]:
    """Run the policy made by `make_policy` and every heuristic at each load and seed."""
    results = []
    for load in loads:
        trace = load_trace(trace_path, load=load)
        arrival_s = [r.arrival_s for r in trace]
        runs: dict[str, dict[str, list[float]]] = {}
        oracle: list[float] = []
        for seed in seeds:
            requests = draw_requests(trace, topology, seed)
            oracle.append(oracle_report(topology, requests)["slo_attainment"])
            specs: list[tuple[str, Callable[[], Policy]]] = [(name, make_policy)]
            specs += [(h, partial(get_policy, h, topology, seed)) for h in heuristics]
            for spec, factory in specs:
                if progress is not None:
                    progress(f"evaluate {spec} at {load:g}x seed {seed}")
                result = simulate(topology, factory(), requests, arrival_s)
                metrics = _metrics(build_report(result, topology, spec))
                for key, value in metrics.items():
                    runs.setdefault(spec, {}).setdefault(key, []).append(value)
        results.append(LoadResult(load, list(seeds), runs, oracle))
    return results


def evaluation_record(results: list[LoadResult], name: str, trace: str) -> dict[str, Any]:
    """The JSON record of an evaluation: per load, the policy, the best heuristic, the oracle
    and every heuristic's summary."""
    loads = []
    for r in results:
        best = r.best_heuristic()
        loads.append(
            {
                "load": r.load,
                "seeds": r.seeds,
                "policy": r.summary(name),
                "best_heuristic": {"name": best, **r.summary(best)},
                "oracle": {
                    "slo_attainment": {
                        "mean": float(np.mean(r.oracle_attainment)),
                        "std": float(np.std(r.oracle_attainment)),
                    }
                },
                "heuristics": {p: r.summary(p) for p in r.runs if p != name},
            }
        )
    return {"trace": trace, "loads": loads}


def format_evaluation(record: dict[str, Any]) -> str:
    """A terminal table: per load, the policy vs the best heuristic vs the oracle."""
    lines = [f"held-out trace: {record['trace']}"]
    header = f"{'load':>5}  {'who':<24}{'SLO att.':>16}{'TTFT p95 (ms)':>22}{'$/1k':>16}"
    lines += [header, "-" * len(header)]
    for entry in record["loads"]:
        best = entry["best_heuristic"]
        for label, s in (("policy", entry["policy"]), (f"best: {best['name']}", best)):
            a, t, c = s["slo_attainment"], s["ttft_p95_ms"], s["cost_per_1k_requests"]
            lines.append(
                f"{entry['load']:>4g}x  {label:<24}"
                f"{a['mean']:>9.1%} ±{a['std']:>5.1%}"
                f"{t['mean']:>14.0f} ±{t['std']:>6.0f}"
                f"{c['mean']:>9.3f} ±{c['std']:>5.3f}"
            )
        oracle = entry["oracle"]["slo_attainment"]
        lines.append(f"{entry['load']:>4g}x  {'oracle (limit)':<24}{oracle['mean']:>9.1%}")
    return "\n".join(lines)
