"""A node's latency as its exporter's histograms show it: a node-health signal, not an SLO's.

An exporter (vLLM, SGLang) counts every request its node served, whatever the request's SLO,
in fixed buckets (vLLM's TTFT bounds run ... 2.5, 5, 7.5, 10 s ...). The node's p95 is then
only known to lie in one bucket, so Locus reports that bucket's bounds ("p95 in 5-7.5 s"),
never a value interpolated inside it, and never judges an SLO by it: SLOs are judged on their
own requests' outcomes (telemetry/breaches.py).

Each scrape's new observations (telemetry/mapping/derive.py) go into 10-second buckets of the
store, `node-latency:{node}:{start}` with fields `{kind}|{lower}|{upper}` -> count, that
expire once LOCUS_NODE_LATENCY_WINDOW_SECONDS has passed them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate

from telemetry import conf
from telemetry.store import get_store

BUCKET_SECONDS = 10  # the default scrape interval: one scrape's observations a bucket
QUANTILE = 0.95
KINDS = ("ttft", "e2e")


def _start(at: datetime) -> int:
    return int(at.timestamp()) // BUCKET_SECONDS * BUCKET_SECONDS


def node_latency_record(
    *, node: str, at: datetime, slices: list[tuple[str, str, float, float, float]]
) -> None:
    """Count one scrape's new observations: (kind, model, lower s, upper s, count) slices."""
    incr: dict[str, int] = {}
    for kind, _model, lower, upper, count in slices:
        n = round(count)
        if n > 0:
            field = f"{kind}|{lower!r}|{upper!r}"
            incr[field] = incr.get(field, 0) + n
    if incr:
        store = get_store()
        ttl = conf.node_latency_window_seconds() + 2 * BUCKET_SECONDS
        store.hincrby(f"{store.prefix}:node-latency:{node}:{_start(at)}", incr, ttl)


def _seconds(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class LatencyBucket:
    """The exporter bucket that holds a node's p95 over the window: (lower, upper] seconds."""

    kind: str
    lower_s: float
    upper_s: float  # inf: the +Inf bucket
    requests: int  # observations in the window

    @property
    def text(self) -> str:
        if math.isinf(self.upper_s):
            return f"p95 above {_seconds(self.lower_s)} s"
        return f"p95 in {_seconds(self.lower_s)}–{_seconds(self.upper_s)} s"

    def to_dict(self) -> dict[str, object]:
        return {
            "quantile": QUANTILE,
            "bucket_s": [self.lower_s, None if math.isinf(self.upper_s) else self.upper_s],
            "requests": self.requests,
            "text": self.text,
        }


def node_latency(*, node: str, now: datetime) -> dict[str, LatencyBucket | None]:
    """Per kind, the exporter bucket holding the node's p95 over the window ending at `now`
    (None when its exporters reported no observation then)."""
    window = conf.node_latency_window_seconds()
    last = _start(now)
    starts = range(last - window + BUCKET_SECONDS, last + BUCKET_SECONDS, BUCKET_SECONDS)
    store = get_store()
    slices: dict[str, dict[tuple[float, float], int]] = {kind: {} for kind in KINDS}
    for fields in store.hgetall_many([f"{store.prefix}:node-latency:{node}:{s}" for s in starts]):
        for name, value in fields.items():
            kind, lower, upper = name.split("|")
            if kind in slices:
                bounds = (float(lower), float(upper))
                slices[kind][bounds] = slices[kind].get(bounds, 0) + int(value)
    return {kind: _p95_bucket(kind, counts) for kind, counts in slices.items()}


def _p95_bucket(kind: str, counts: dict[tuple[float, float], int]) -> LatencyBucket | None:
    total = sum(counts.values())
    if total <= 0:
        return None
    rank = math.ceil(QUANTILE * total)
    # Buckets of different exporters may overlap; ordered by upper bound, the first that
    # reaches the rank holds the quantile's value or is above it.
    ordered = sorted(counts, key=lambda bounds: (bounds[1], bounds[0]))
    reached = accumulate(counts[bounds] for bounds in ordered)
    lower, upper = next(b for b, seen in zip(ordered, reached, strict=True) if seen >= rank)
    return LatencyBucket(kind, lower, upper, total)
