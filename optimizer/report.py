"""The JSON report of a simulation (docs/contracts.md §3), plus extras and the terminal table."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from optimizer.sim.engine import SimResult
from optimizer.sim.requests import FAILED, REJECTED, SERVED
from optimizer.topology import Topology


def latency_stats(values_s: np.ndarray) -> dict[str, float]:
    """Mean and percentiles in milliseconds; zeros when nothing was served."""
    if values_s.size == 0:
        return {"mean": 0.0, "p50": 0.0, "p95": 0.0, "p99": 0.0}
    ms = values_s * 1000.0
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return {"mean": float(ms.mean()), "p50": float(p50), "p95": float(p95), "p99": float(p99)}


def slo_met(result: SimResult, topology: Topology) -> np.ndarray:
    """Per request: served and within every target of its SLO (docs/contracts.md §3)."""
    t = result.table
    met = np.array(t.status) == SERVED
    ttft = np.array(t.ttft)
    e2e = np.array(t.e2e)
    cost = np.array(t.cost)
    for i, request in enumerate(t.requests):
        if not met[i] or request.slo is None:
            continue
        slo = topology.slo_by_name[request.slo]
        over_budget = slo.max_usd_per_1k is not None and cost[i] * 1000.0 > slo.max_usd_per_1k
        late = ttft[i] * 1000.0 > slo.ttft_p95_ms or e2e[i] * 1000.0 > slo.e2e_p95_ms
        met[i] = not (late or over_budget)
    return met


def build_report(result: SimResult, topology: Topology, policy: str) -> dict[str, Any]:
    """The report object of one run: every docs/contracts.md §3 key, then extras."""
    t = result.table
    status = np.array(t.status)
    served = status == SERVED
    n_served = int(served.sum())
    cost = float(np.array(t.cost)[served].sum())
    prompt = np.array(t.prompt)[served]
    cached = np.array(t.cached)[served]
    met = slo_met(result, topology)
    duration = result.duration_s

    node_of = np.array(t.node)
    per_node_requests = Counter(node_of[served].tolist())
    per_node: dict[str, dict[str, float]] = {}
    idle_cost = 0.0
    for node in result.nodes:
        busy = min(node.busy_s, duration)
        per_node[node.name] = {
            "requests": per_node_requests.get(node.index, 0),
            "utilization": busy / duration if duration > 0 else 0.0,
        }
        idle_cost += node.usd_per_s * (duration - busy)

    violations = 0
    tiers: Counter[str] = Counter()
    for i in np.flatnonzero(served).tolist():
        site = topology.site_by_name[topology.nodes[t.node[i]].site]
        tiers[site.tier] += 1
        residency = t.requests[i].residency
        if residency is not None and site.jurisdiction != residency:
            violations += 1

    per_slo: dict[str, dict[str, float]] = {}
    for name in sorted({r.slo for r in t.requests if r.slo is not None}):
        mask = np.array([r.slo == name for r in t.requests])
        per_slo[name] = {
            "requests": int(mask.sum()),
            "served": int((mask & served).sum()),
            "slo_attainment": float(met[mask].mean()) if mask.any() else 0.0,
        }

    return {
        "policy": policy,
        "requests": len(status),
        "served": n_served,
        "rejected": int((status == REJECTED).sum()),
        "ttft_ms": latency_stats(np.array(t.ttft)[served]),
        "e2e_ms": latency_stats(np.array(t.e2e)[served]),
        "slo_attainment": float(met.mean()) if len(met) else 0.0,
        "cost_usd": cost,
        "cost_per_1k_requests": cost / n_served * 1000.0 if n_served else 0.0,
        "egress_gb": float(np.array(result.egress_bytes)[served].sum()) / 1e9,
        "prefix_hit_rate": float(cached.sum() / prompt.sum()) if prompt.sum() else 0.0,
        "residency_violations": violations,
        "per_node": per_node,
        "wall_seconds": result.wall_seconds,
        "sim_speedup": duration / result.wall_seconds if result.wall_seconds > 0 else 0.0,
        # extras
        "failed": int((status == FAILED).sum()),
        "sim_seconds": duration,
        "idle_cost_usd": idle_cost,
        "per_slo": per_slo,
        "per_tier": {tier: tiers.get(tier, 0) for tier in sorted(tiers)},
        "reject_reasons": dict(sorted(result.reject_reasons.items())),
    }


def format_table(policies: dict[str, dict[str, Any]], oracle: dict[str, Any] | None) -> str:
    """A fixed-width comparison table for the terminal."""
    header = (
        f"{'policy':<16}{'SLO att.':>9}{'TTFT mean':>11}{'TTFT p95':>10}{'E2E p95':>10}"
        f"{'$/1k':>8}{'hit rate':>9}{'rejected':>9}{'speedup':>9}"
    )
    lines = [header, "-" * len(header)]
    for name, r in policies.items():
        lines.append(
            f"{name:<16}{r['slo_attainment']:>9.1%}{r['ttft_ms']['mean']:>9.0f}ms"
            f"{r['ttft_ms']['p95']:>8.0f}ms{r['e2e_ms']['p95'] / 1000:>9.1f}s"
            f"{r['cost_per_1k_requests']:>8.3f}{r['prefix_hit_rate']:>9.1%}"
            f"{r['rejected']:>9d}{r['sim_speedup']:>8.0f}x"
        )
    if oracle is not None:
        lines.append(
            f"{'(oracle)':<16}{oracle['slo_attainment']:>9.1%}{oracle['ttft_ms']['mean']:>9.0f}ms"
        )
    return "\n".join(lines)
