"""Figures from a Prometheus text exposition (a router's `/metrics`): a histogram's count, mean
and quantiles, and a sample's value, for the benchmarks that read them."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def _samples(text: str, name: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name or s.name.startswith(name + "_")
    ]


def metric_value(text: str, name: str) -> float:
    """The sum of `name`'s samples (a counter's `_total` included); 0 when absent."""
    wanted = {name, name + "_total"}
    return sum(v for n, _, v in _samples(text, name) if n in wanted)


def quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """Prometheus' `histogram_quantile`: linear within the bucket holding rank q * count,
    the highest finite bound when it falls in the +Inf bucket (cumulative `(le, count)`)."""
    if not buckets or buckets[-1][1] == 0:
        return 0.0
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = le, count
    return lower


def histogram(text: str, name: str, scale: float = 1.0) -> dict[str, Any]:
    """`name`'s count, mean, p50 and p99 (times `scale`), every label set summed."""
    per_le: dict[float, float] = {}
    total = count = 0.0
    for sample, labels, value in _samples(text, name):
        if sample == name + "_bucket":
            le = float(labels["le"])
            per_le[le] = per_le.get(le, 0.0) + value
        elif sample == name + "_sum":
            total += value
        elif sample == name + "_count":
            count += value
    buckets = sorted(per_le.items())
    return {
        "count": int(count),
        "mean": round(total / count * scale, 3) if count else 0.0,
        "p50": round(quantile(buckets, 0.5) * scale, 3),
        "p99": round(quantile(buckets, 0.99) * scale, 3),
    }
