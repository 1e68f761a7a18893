"""Held-out evaluation of a trained policy against every built-in heuristic and the oracle
(phase 6 of `optimizer.rl.train.train`, `evaluate`, when a held-out trace is given).

Replays are jobs (`optimizer.rl.replays`) that any executor runs; the record is assembled from
their results. For each load and seed, the held-out trace is replayed once per policy on the
same arrivals
(sources and models drawn with the seed, docs/contracts.md §2), and the policy's SLO attainment, p95
TTFT and cost per 1k requests are set against those of the best heuristic for that load (the
one with the highest mean attainment over the seeds) and the oracle's limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from optimizer.decide.registry import POLICY_NAMES
from optimizer.rl.replays import ORACLE, Job, trace_job
from optimizer.rl.run import Run

METRICS: tuple[str, ...] = (
    "slo_attainment",
    "ttft_p95_ms",
    "ttft_mean_ms",
    "cost_per_1k_requests",
)


@dataclass(frozen=True, slots=True)
class LoadResult:
    """Per-policy metric lists (one value per seed) at one load, plus the oracle's."""

    load: float
    seeds: list[int]
    runs: dict[str, dict[str, list[float]]]
    oracle_attainment: list[float]
    utilisation: float
    """The load as a utilisation of the fleet's capacity for the trace (`optimizer.capacity`)."""

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


def _metrics(result: dict[str, Any]) -> dict[str, float]:
    return {key: result[key] for key in METRICS}


def evaluation_jobs(
    *,
    topology: str,
    trace: str,
    policy: str,
    loads: Sequence[float],
    seeds: Sequence[int],
    heuristics: Sequence[str] = POLICY_NAMES,
) -> list[Job]:
    """Replays of `policy`, every heuristic and the oracle at each load and seed, all on the
    same arrivals per (load, seed)."""
    specs = [policy, *heuristics, ORACLE]
    return [
        trace_job(topology=topology, trace=trace, policy=spec, load=load, seed=seed)
        for load in loads
        for seed in seeds
        for spec in specs
    ]


def collect_evaluation(
    jobs: Sequence[Job], results: Sequence[dict[str, Any]], policy: str, trace: str
) -> dict[str, Any]:
    """The evaluation record of `jobs` and their `results` (in job order), with `policy`'s
    runs under its directory's name. Runs are grouped by job fields only, so the record is
    the same whichever executor ran them and in whatever order they finished."""
    name = Path(policy).name
    by_load: dict[float, LoadResult] = {}
    for job, result in zip(jobs, results, strict=True):
        load = float(job["load"])
        entry = by_load.setdefault(load, LoadResult(load, [], {}, [], result["utilisation"]))
        if job["seed"] not in entry.seeds:
            entry.seeds.append(job["seed"])
        if job["policy"] == ORACLE:
            entry.oracle_attainment.append(result["slo_attainment"])
            continue
        spec = name if job["policy"] == policy else job["policy"]
        for key, value in _metrics(result).items():
            entry.runs.setdefault(spec, {}).setdefault(key, []).append(value)
    return evaluation_record(list(by_load.values()), name, trace)


def evaluation_record(results: list[LoadResult], name: str, trace: str) -> dict[str, Any]:
    """The JSON record of an evaluation: per load, the policy, the best heuristic, the oracle
    and every heuristic's summary."""
    loads = []
    for r in results:
        best = r.best_heuristic()
        loads.append(
            {
                "load": r.load,
                "utilisation": r.utilisation,
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
        lines.append(f"load {entry['load']:g}x = utilisation {entry['utilisation']:.2f}")
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
