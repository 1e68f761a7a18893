"""Rates and quantiles from cumulative counters and histograms, against the previous scrape.

Counter resets (a restarted exporter) follow Prometheus' `rate()`: a value lower than the
previous one means the counter restarted from zero, so the increase is the new value itself.
Quantiles follow `histogram_quantile()`: linear interpolation inside the bucket holding the
rank, the lowest bucket starting at 0, and the highest finite bound when the rank falls in +Inf.
On a node's first scrape there is no previous one: ratios and quantiles then use the
cumulative totals (since the exporter started), rates are left unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from telemetry.mapping.base import HistogramSeries, Observation

Prev = dict[str, tuple[float, float]]  # state key -> (cumulative value, epoch seconds)


@dataclass
class Derived:
    fields: dict[str, float] = field(default_factory=dict)
    # New observations since the previous scrape, per histogram bucket: (kind "ttft"|"e2e",
    # model, the bucket's lower and upper bound in seconds (upper inf for +Inf), count).
    latencies: list[tuple[str, str, float, float, float]] = field(default_factory=list)


def _increase(prev: Prev, key: str, value: float, ts: float) -> float | None:
    """The counter's increase since the previous scrape (None on first sight or old data)."""
    before = prev.get(key)
    if before is not None and ts <= before[1]:
        return None  # out of order: keep the newer state
    prev[key] = (value, ts)
    if before is None:
        return None
    return value - before[0] if value >= before[0] else value


def _counter(obs: Observation, name: str, prev: Prev, ts: float) -> tuple[float, float, bool]:
    """(total increase, cumulative total, whether every series had a previous value)."""
    increase, total, complete = 0.0, 0.0, True
    for sid, value in obs.counters.get(name, {}).items():
        total += value
        inc = _increase(prev, f"c|{name}|{sid}", value, ts)
        if inc is None:
            complete = False
        else:
            increase += inc
    return increase, total, complete


def _elapsed(prev: Prev, key: str, ts: float) -> float | None:
    before = prev.get(key)
    prev[key] = (0.0, ts) if before is None or ts > before[1] else before
    return None if before is None or ts <= before[1] else ts - before[1]


def quantile(q: float, buckets: dict[float, float]) -> float | None:
    """histogram_quantile(q) over {upper bound: cumulative count}."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank = q * buckets[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def _histogram_delta(
    name: str, series: dict[str, HistogramSeries], prev: Prev, ts: float
) -> tuple[dict[float, float], list[tuple[str, float, float, float]]]:
    """Merged new-observation buckets, and per-model (model, lower, upper, count) slices."""
    merged: dict[float, float] = {}
    slices: list[tuple[str, float, float, float]] = []
    for sid, hist in series.items():
        lower, below = 0.0, 0.0
        for bound in sorted(hist.buckets):
            count = hist.buckets[bound]
            key = f"h|{name}|{sid}|{bound}"
            before = prev.get(key)
            if before is not None and ts <= before[1]:
                continue
            prev[key] = (count, ts)
            base = 0.0 if before is None or count < before[0] else before[0]
            delta = count - base
            merged[bound] = merged.get(bound, 0.0) + delta
            in_bucket = delta - below
            if in_bucket > 0 and before is not None:
                slices.append((hist.model, lower, bound, in_bucket))
            lower, below = bound, delta
    return merged, slices


def derive(obs: Observation, ts: float, prev: Prev) -> Derived:
    """Canonical field values for one scrape at epoch `ts`; updates `prev` in place."""
    out = Derived(fields=dict(obs.gauges))
    elapsed = _elapsed(prev, "t|gen_tokens", ts) if "gen_tokens" in obs.counters else None
    increase, _, complete = _counter(obs, "gen_tokens", prev, ts)
    if elapsed and complete:
        out.fields["gen_tokens_per_s"] = increase / elapsed
    hits, hits_total, hits_ok = _counter(obs, "prefix_hits", prev, ts)
    queries, queries_total, queries_ok = _counter(obs, "prefix_queries", prev, ts)
    if hits_ok and queries_ok and queries > 0:
        out.fields["prefix_hit_rate"] = hits / queries
    elif not (hits_ok and queries_ok) and queries_total > 0:
        out.fields["prefix_hit_rate"] = hits_total / queries_total
    idle, idle_total, idle_ok = _counter(obs, "cpu_idle", prev, ts)
    busy, busy_total, busy_ok = _counter(obs, "cpu_total", prev, ts)
    if idle_ok and busy_ok and busy > 0:
        out.fields["cpu_util"] = max(0.0, 1.0 - idle / busy)
    elif not (idle_ok and busy_ok) and busy_total > 0:
        out.fields["cpu_util"] = max(0.0, 1.0 - idle_total / busy_total)
    for kind, series in obs.histograms.items():
        merged, slices = _histogram_delta(kind, series, prev, ts)
        for model, lower, upper, count in slices:
            out.latencies.append((kind, model, lower, upper, count))
        names = {"ttft": ("ttft_p50_s", "ttft_p95_s"), "e2e": (None, "e2e_p95_s")}.get(kind)
        if names is None:
            continue
        p50, p95 = quantile(0.5, merged), quantile(0.95, merged)
        if names[0] and p50 is not None:
            out.fields[names[0]] = p50
        if p95 is not None:
            out.fields[names[1]] = p95
    return out
