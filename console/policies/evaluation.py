"""Simulator evaluations of a policy version against the active policy and every heuristic,
on the same arrivals (docs/contracts.md §3 report objects), for the console's approval step."""

from __future__ import annotations

from collections.abc import Callable
from statistics import fmean
from typing import Any

from optimizer.oracle import oracle_report
from optimizer.policies import POLICY_NAMES, load_policy
from optimizer.report import build_report
from optimizer.sim import simulate
from optimizer.sim.telemetry import TelemetryModel
from optimizer.topology import Topology
from optimizer.traces import draw_requests, load_trace

# The figures an approver compares, averaged over seeds.
HEADLINE = ("slo_attainment", "cost_per_1k_requests", "prefix_hit_rate")


def evaluate_versions(
    *,
    topology: Topology,
    trace: str,
    candidate: str,
    baseline: str,
    loads: list[float],
    seeds: list[int],
    limit: int | None = None,
    telemetry_interval_s: float | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> dict[str, Any]:
    """Run candidate, baseline and the heuristics at each load and seed.

    With `telemetry_interval_s`, policies see node state as the live engine does, through
    telemetry that many seconds apart (`optimizer.sim.telemetry`), so the report predicts what
    a canary will see; None shows them the simulator's exact state.

    Returns `{"loads": {load: {"policies": {spec: mean report}, "oracle": ...,
    "best_heuristic": name}}, "verdict": {...}}` where each policy's report holds the headline
    figures averaged over seeds plus TTFT percentiles averaged likewise.
    """
    specs = list(dict.fromkeys([candidate, baseline, *POLICY_NAMES]))
    total = len(loads) * len(seeds) * len(specs)
    done = 0
    by_load: dict[str, Any] = {}
    for load in loads:
        trace_requests = load_trace(trace, limit=limit, load=load)
        arrivals = [r.arrival_s for r in trace_requests]
        runs: dict[str, list[dict[str, Any]]] = {spec: [] for spec in specs}
        oracle: dict[str, Any] = {}
        for seed in seeds:
            requests = draw_requests(trace_requests, topology, seed)
            oracle = oracle_report(topology, requests)
            for spec in specs:
                telemetry = (
                    TelemetryModel(telemetry_interval_s, seed=seed)
                    if telemetry_interval_s is not None
                    else None
                )
                result = simulate(
                    topology,
                    load_policy(spec, topology, seed),
                    requests,
                    arrivals,
                    telemetry=telemetry,
                )
                runs[spec].append(build_report(result, topology, spec))
                done += 1
                if progress is not None:
                    progress(done / total, f"load {load:g}x seed {seed}: {spec}")
        policies = {spec: _mean_report(reports) for spec, reports in runs.items()}
        best = max(
            POLICY_NAMES,
            key=lambda n: (policies[n]["slo_attainment"], -policies[n]["cost_per_1k_requests"]),
        )
        by_load[f"{load:g}"] = {"policies": policies, "oracle": oracle, "best_heuristic": best}
    return {
        "trace": trace,
        "telemetry_interval_s": telemetry_interval_s,
        "candidate": candidate,
        "baseline": baseline,
        "seeds": seeds,
        "loads": by_load,
        "verdict": _verdict(by_load, candidate, baseline),
    }


def _mean_report(reports: list[dict[str, Any]]) -> dict[str, Any]:
    first = reports[0]
    mean: dict[str, Any] = {key: fmean(r[key] for r in reports) for key in HEADLINE}
    for key in ("ttft_ms", "e2e_ms"):
        mean[key] = {p: fmean(r[key][p] for r in reports) for p in first[key]}
    mean["requests"] = first["requests"]
    mean["served"] = fmean(r["served"] for r in reports)
    mean["residency_violations"] = sum(r["residency_violations"] for r in reports)
    return mean


def _verdict(by_load: dict[str, Any], candidate: str, baseline: str) -> dict[str, Any]:
    """Per load, the candidate's attainment and cost against the baseline and the best
    heuristic, in points (attainment) and ratios (cost)."""
    out = {}
    for load, result in by_load.items():
        p = result["policies"]
        best = p[result["best_heuristic"]]
        out[load] = {
            "vs_baseline_points": 100
            * (p[candidate]["slo_attainment"] - p[baseline]["slo_attainment"]),
            "vs_best_heuristic_points": 100
            * (p[candidate]["slo_attainment"] - best["slo_attainment"]),
            "cost_ratio_vs_baseline": _ratio(
                p[candidate]["cost_per_1k_requests"], p[baseline]["cost_per_1k_requests"]
            ),
        }
    return out


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None
