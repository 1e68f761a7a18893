"""Sliding windows per (SLO, model, node): time buckets of counts and latency sketches.

A window is LOCUS_SLO_WINDOW_SECONDS of buckets LOCUS_SLO_BUCKET_SECONDS wide, each a hash in
the store (Redis HINCRBY, so concurrent writers add up) that expires when it leaves the window.
Latencies go into a log-bucketed histogram (boundaries 1 ms x 1.1^i, so any quantile read
from it is within 10% of the truth, the scheme of DDSketch / HdrHistogram). Recording costs one
round trip; reading a window costs one pipelined round trip; nothing touches the database.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from telemetry import conf
from telemetry.store import get_store

_GROWTH = 1.1
_LOG_GROWTH = math.log(_GROWTH)
_MAX_INDEX = 250  # 1.1^250 ms is ~7 years: nothing is slower


def sketch_index(ms: float) -> int:
    if ms <= 1.0:
        return 0
    return min(_MAX_INDEX, int(math.log(ms) / _LOG_GROWTH) + 1)


def sketch_value(index: int) -> float:
    """The representative latency (ms) of a sketch bucket: its geometric midpoint."""
    if index == 0:
        return 1.0
    return _GROWTH ** (index - 0.5)


@dataclass(frozen=True)
class WindowStats:
    """What one window holds now."""

    outcomes: int
    errors: int
    ttft_count: int
    ttft_p95_ms: float | None
    e2e_count: int
    e2e_p95_ms: float | None

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.outcomes if self.outcomes else None


def window_key(slo: str, model: str, node: str) -> str:
    return f"{slo}|{model}|{node}"


def _bucket_start(at: datetime) -> int:
    width = conf.slo_bucket_seconds()
    return int(at.timestamp()) // width * width


def record(
    *,
    key: str,
    at: datetime,
    ttft_ms: float | None = None,
    e2e_ms: float | None = None,
    ok: bool | None = None,
    count: int = 1,
) -> None:
    """Add `count` observations to the window's bucket for time `at`."""
    incr: dict[str, int] = {}
    if ok is not None:
        incr["n"] = count
        if not ok:
            incr["err"] = count
    if ttft_ms is not None:
        incr["tn"] = count
        incr[f"t{sketch_index(ttft_ms)}"] = count
    if e2e_ms is not None:
        incr["en"] = count
        incr[f"e{sketch_index(e2e_ms)}"] = count
    if not incr:
        return
    store = get_store()
    ttl = conf.slo_window_seconds() + 2 * conf.slo_bucket_seconds()
    store.hincrby(f"{store.prefix}:slo:{key}:{_bucket_start(at)}", incr, ttl)


def _p95(counts: dict[int, int], total: int) -> float | None:
    if total <= 0:
        return None
    rank = math.ceil(0.95 * total)
    seen = 0
    for index in sorted(counts):
        seen += counts[index]
        if seen >= rank:
            return sketch_value(index)
    return sketch_value(max(counts))


def read(*, key: str, now: datetime) -> WindowStats:
    """The window ending at `now` (the bucket holding `now` included)."""
    width, span = conf.slo_bucket_seconds(), conf.slo_window_seconds()
    last = _bucket_start(now)
    starts = range(last - span + width, last + width, width)
    store = get_store()
    buckets = store.hgetall_many([f"{store.prefix}:slo:{key}:{s}" for s in starts])
    totals: dict[str, int] = {}
    ttft: dict[int, int] = {}
    e2e: dict[int, int] = {}
    for bucket in buckets:
        for name, text in bucket.items():
            n = int(text)
            if name[0] == "t" and name[1:].isdigit():
                ttft[int(name[1:])] = ttft.get(int(name[1:]), 0) + n
            elif name[0] == "e" and name[1:].isdigit():
                e2e[int(name[1:])] = e2e.get(int(name[1:]), 0) + n
            else:
                totals[name] = totals.get(name, 0) + n
    return WindowStats(
        outcomes=totals.get("n", 0),
        errors=totals.get("err", 0),
        ttft_count=totals.get("tn", 0),
        ttft_p95_ms=_p95(ttft, totals.get("tn", 0)),
        e2e_count=totals.get("en", 0),
        e2e_p95_ms=_p95(e2e, totals.get("en", 0)),
    )
