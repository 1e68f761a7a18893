"""Reads of telemetry: fresh node state (for the decision engine), series (for charts), breaches.

The decision engine should call `latest_fleet_state()` from its background refresher, never on
the request path: it is one pipelined Redis round trip (or a dict read on embedded defaults)
and returns {} rather than raising when the store is down.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import Avg, Q, QuerySet

from console.buckets import EpochBucket
from telemetry.models import BreachNode, Reading, ReadingRollup, Series, SlaBreach
from telemetry.state import NodeTelemetry, read_nodes

__all__ = [
    "NodeTelemetry",
    "SeriesPoints",
    "BreachInterval",
    "breach_intervals",
    "breach_list",
    "fleet_metric_buckets",
    "latest_fleet_state",
    "latest_node_state",
    "node_metric_names",
    "node_series",
    "running_history",
]
MAX_SERIES = 200
MAX_POINTS = 20_000


def latest_node_state(node_name: str) -> NodeTelemetry | None:
    """The node's latest canonical values and their age; None if it never reported."""
    return read_nodes([node_name]).get(node_name)


def latest_fleet_state() -> dict[str, NodeTelemetry]:
    """Latest state of every node that ever reported, by name (stale ones included)."""
    return read_nodes()


def running_history(
    *, nodes: Iterable[str], start: datetime, end: datetime
) -> dict[str, tuple[list[float], list[float]]]:
    """Each node's canonical `running` readings (sequences being served) in [start, end]:
    {node: (epoch seconds ascending, values)}; nodes without readings are left out. The
    canonical series has no labels (telemetry.mapping.base), so it is one series a node."""
    rows = (
        Reading.objects.filter(
            series__metric="running",
            series__labels_hash=0,
            series__node__in=list(nodes),
            ts__gte=start,
            ts__lte=end,
        )
        .order_by("series__node", "ts")
        .values_list("series__node", "ts", "value")
    )
    history: dict[str, tuple[list[float], list[float]]] = {}
    for node, ts, value in rows.iterator(chunk_size=5000):
        times, values = history.setdefault(node, ([], []))
        times.append(ts.timestamp())
        values.append(value)
    return history


@dataclass(frozen=True)
class SeriesPoints:
    """One series of a node's metric over a time range: [(time, value)], oldest first."""

    labels: dict[str, str]
    points: list[tuple[datetime, float]]


def node_metric_names(*, node: str) -> list[str]:
    return sorted(set(Series.objects.filter(node=node).values_list("metric", flat=True)))


def node_series(
    *, node: str, metric: str, start: datetime, end: datetime, step_s: float | None
) -> tuple[list[SeriesPoints], bool]:
    """The metric's series in [start, end); averaged per `step_s` if given.

    Steps of a minute or more read the 1-minute rollups (the current minute appears after the
    next rollup run); shorter steps and raw points read the readings. Returns (series,
    truncated) where truncated means MAX_POINTS cut the answer short.
    """
    found = list(
        Series.objects.filter(node=node, metric=metric).values_list("id", "labels")[:MAX_SERIES]
    )
    labels = {sid: lab for sid, lab in found}
    if not labels:
        return [], False
    sums: dict[tuple[int, float], list[float]] = {}  # (series, bucket start) -> [sum, count]
    raw: dict[int, list[tuple[datetime, float]]] = {sid: [] for sid in labels}
    if step_s is not None and step_s >= 60:
        rows = ReadingRollup.objects.filter(
            series_id__in=labels, bucket__gte=start, bucket__lt=end
        ).values_list("series_id", "bucket", "sum", "count")
        for sid, bucket, total, count in rows[:MAX_POINTS]:
            acc = sums.setdefault((sid, bucket.timestamp() // step_s * step_s), [0.0, 0.0])
            acc[0] += total
            acc[1] += count
        truncated = len(rows[: MAX_POINTS + 1]) > MAX_POINTS
    else:
        query = (
            Reading.objects.filter(series_id__in=labels, ts__gte=start, ts__lt=end)
            .order_by("series_id", "ts")
            .values_list("series_id", "ts", "value")
        )
        points = list(query[: MAX_POINTS + 1])
        truncated = len(points) > MAX_POINTS
        for sid, ts, value in points[:MAX_POINTS]:
            if step_s:
                acc = sums.setdefault((sid, ts.timestamp() // step_s * step_s), [0.0, 0.0])
                acc[0] += value
                acc[1] += 1
            else:
                raw[sid].append((ts, value))
    for (sid, start_s), (total, n) in sorted(sums.items()):
        raw[sid].append((datetime.fromtimestamp(start_s, tz=UTC), total / n))
    result = [SeriesPoints(labels=labels[sid], points=pts) for sid, pts in raw.items() if pts]
    return result, truncated


def fleet_metric_buckets(
    *, metric: str, start: datetime, end: datetime, step: int
) -> dict[int, float]:
    """A canonical node metric averaged over the whole fleet per `step`-second bucket (epoch
    seconds of the bucket's start -> mean of every reading in it), computed in the database."""
    rows = (
        Reading.objects.filter(
            series__in=Series.objects.filter(metric=metric), ts__gte=start, ts__lt=end
        )
        .annotate(bucket=EpochBucket("ts", step))
        .values("bucket")
        .annotate(mean=Avg("value"))
        .values_list("bucket", "mean")
    )
    return {int(bucket): float(mean) for bucket, mean in rows}


def breach_list(
    *,
    status: str | None = None,
    slo: str | None = None,
    node: str | None = None,
    model: str | None = None,
    metric: str | None = None,
    severity: str | None = None,
) -> QuerySet[SlaBreach]:
    """Breaches, newest first. `node` matches a breach that names the node among those that
    burned its budget, or (breaches from before burn-rate rules) as its window's node."""
    query = SlaBreach.objects.all()
    for name, value in (
        ("status", status),
        ("slo", slo),
        ("model", model),
        ("metric", metric),
        ("severity", severity),
    ):
        if value:
            query = query.filter(**{name: value})
    if node:
        query = query.filter(Q(node=node) | Q(burning__node=node)).distinct()
    return query


@dataclass(frozen=True, slots=True)
class BreachInterval:
    """A breach that names `node` among those that burned its SLO's budget, open from
    `opened_at` until `resolved_at` (None: still open)."""

    breach_id: int
    node: str
    slo: str
    severity: str
    metric: str
    opened_at: datetime
    resolved_at: datetime | None
    burn_rate: float | None
    requests: int | None
    bad: int | None

    def open_at(self, at: datetime) -> bool:
        return self.opened_at <= at and (self.resolved_at is None or at < self.resolved_at)


def breach_intervals(
    *, nodes: Iterable[str], since: datetime, until: datetime
) -> list[BreachInterval]:
    """The breaches naming any of `nodes` that were open at some moment in [since, until],
    oldest first: what a page of decision records needs to say which were placed on a node in
    an open breach, in one query. A breach from before burn-rate rules names its node as its
    window's; a burn-rate breach in its `burning` rows (as of its last firing evaluation:
    which pairs burned is not kept per moment)."""
    names = sorted(set(nodes))
    if not names:
        return []
    overlapping = Q(opened_at__lte=until) & (Q(resolved_at__isnull=True) | Q(resolved_at__gt=since))
    found: dict[tuple[int, str], BreachInterval] = {}
    for row in (
        BreachNode.objects.filter(node__in=names)
        .filter(
            Q(breach__opened_at__lte=until)
            & (Q(breach__resolved_at__isnull=True) | Q(breach__resolved_at__gt=since))
        )
        .select_related("breach")
        .order_by("breach__opened_at", "-burn_rate")
    ):
        b = row.breach
        found.setdefault(
            (b.pk, row.node),
            BreachInterval(
                breach_id=b.pk,
                node=row.node,
                slo=b.slo,
                severity=b.severity,
                metric=b.metric,
                opened_at=b.opened_at,
                resolved_at=b.resolved_at,
                burn_rate=row.burn_rate,
                requests=row.requests,
                bad=row.bad,
            ),
        )
    for b in SlaBreach.objects.filter(overlapping, node__in=names).order_by("opened_at"):
        found.setdefault(
            (b.pk, b.node),
            BreachInterval(
                breach_id=b.pk,
                node=b.node,
                slo=b.slo,
                severity=b.severity,
                metric=b.metric,
                opened_at=b.opened_at,
                resolved_at=b.resolved_at,
                burn_rate=None,
                requests=None,
                bad=None,
            ),
        )
    return sorted(found.values(), key=lambda i: (i.opened_at, i.breach_id))
