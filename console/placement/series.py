"""Fleet-wide time series for the dashboard's charts (`GET /api/v1/series/fleet`).

Every figure is counted or averaged per bucket in the database (`console.buckets`), over a
bounded range, and returned on one shared time axis: counts are 0 in a bucket without
events, ratios and means are null there (no data, drawn as a gap).

- decisions/s and decision latency (mean and max engine time) from decision records;
- fallbacks: decisions the fallback heuristic made (`degraded` set), as
  `locus_fallbacks_total` counts them;
- breaker trips: breakers moving to open (`BreakerEvent`);
- per SLO, from the outcomes reported for the bucket's decisions: attainment, its objective
  and the error-budget burn rate. An SLO's targets are p95 latencies (docs/contracts.md §1),
  so its objective is that 95% of requests meet them; the burn rate is the miss rate over
  the 5% budget (Google SRE Workbook, "Alerting on SLOs": 1 spends the budget exactly over
  the SLO period, above 1 exhausts it early);
- prefix hit rate: the fleet mean of the nodes' `prefix_hit_rate` telemetry;
- rollout marks: shadow, canary, promote and rollback moves;
- events: drains, cordons and other node state changes, breaker moves, breaches opening and
  resolving (console/placement/annotations.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Avg, Count, Max, Q

from console.buckets import EpochBucket, bucket_starts
from console.inventory.models import Slo
from console.placement.annotations import series_events
from console.placement.models import BreakerEvent, DecisionRecord
from console.placement.rollout import rollout_store
from telemetry.selectors import fleet_metric_buckets

# The share of requests an SLO's p95 targets allow to miss (docs/contracts.md §1: targets are
# 95th percentiles).
SLO_OBJECTIVE = 0.95


def fleet_series(*, start: datetime, end: datetime, step: int) -> dict[str, Any]:
    """Every fleet-wide chart series over [start, end) in `step`-second buckets."""
    times = bucket_starts(start, end, step)
    index = {t: i for i, t in enumerate(times)}
    records = DecisionRecord.objects.filter(created_at__gte=start, created_at__lt=end).annotate(
        bucket=EpochBucket("created_at", step)
    )

    decisions = [0] * len(times)
    fallbacks = [0] * len(times)
    latency_mean: list[float | None] = [None] * len(times)
    latency_max: list[float | None] = [None] * len(times)
    for row in records.values("bucket").annotate(
        n=Count("id"),
        degraded=Count("id", filter=~Q(degraded="")),
        mean=Avg("latency_us"),
        top=Max("latency_us"),
    ):
        i = index.get(int(row["bucket"]))
        if i is not None:
            decisions[i] = row["n"]
            fallbacks[i] = row["degraded"]
            latency_mean[i] = row["mean"]
            latency_max[i] = row["top"]

    trips = [0] * len(times)
    opened = (
        BreakerEvent.objects.filter(at__gte=start, at__lt=end, to_state="open")
        .annotate(bucket=EpochBucket("at", step))
        .values("bucket")
        .annotate(n=Count("id"))
    )
    for row in opened:
        i = index.get(int(row["bucket"]))
        if i is not None:
            trips[i] = row["n"]

    prefix = fleet_metric_buckets(metric="prefix_hit_rate", start=start, end=end, step=step)
    return {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "step": step,
        "t": times,
        "decisions_per_s": [n / step for n in decisions],
        "latency_us_mean": latency_mean,
        "latency_us_max": latency_max,
        "fallbacks": fallbacks,
        "breaker_trips": trips,
        "prefix_hit_rate": [prefix.get(t) for t in times],
        "slos": _slo_series(records, times, index),
        "marks": rollout_store().marks(start=start, end=end),
        "events": series_events(start=start, end=end),
    }


def _slo_series(records: Any, times: list[int], index: dict[int, int]) -> list[dict[str, Any]]:
    rows = (
        records.filter(slo_met__isnull=False)
        .exclude(slo="")
        .values("slo", "bucket")
        .annotate(outcomes=Count("id"), met=Count("id", filter=Q(slo_met=True)))
    )
    by_slo: dict[str, dict[str, list[Any]]] = {}
    for row in rows:
        i = index.get(int(row["bucket"]))
        if i is None:
            continue
        series = by_slo.setdefault(row["slo"], _empty(len(times)))
        attainment = row["met"] / row["outcomes"]
        series["outcomes"][i] = row["outcomes"]
        series["attainment"][i] = attainment
        series["burn_rate"][i] = (1 - attainment) / (1 - SLO_OBJECTIVE)
    targets = {s.name: s for s in Slo.objects.filter(name__in=by_slo)}
    return [
        {
            "slo": name,
            "objective": SLO_OBJECTIVE,
            "ttft_p95_ms": targets[name].ttft_p95_ms if name in targets else None,
            "e2e_p95_ms": targets[name].e2e_p95_ms if name in targets else None,
            **series,
        }
        for name, series in sorted(by_slo.items())
    ]


def _empty(n: int) -> dict[str, list[Any]]:
    return {"outcomes": [0] * n, "attainment": [None] * n, "burn_rate": [None] * n}
