"""Prometheus metrics of the decision engine, served at /metrics (docs/contracts.md §4).

With several server processes, set PROMETHEUS_MULTIPROC_DIR to a shared empty directory so
/metrics aggregates every process (prometheus_client's multiprocess mode).
"""

from __future__ import annotations

import os

from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import multiprocess as prom_multiprocess

from console.queues import QueueBacklogCollector
from telemetry.collectors import FreshnessCollector, InboxCollector, SloObjectiveCollector

# Decisions take tens of microseconds to a few milliseconds of engine work.
_LATENCY_BUCKETS = (
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
)

DECISION_LATENCY = Histogram(
    "locus_decision_latency_seconds",
    "Engine time per placement decision (filter, score, pick), excluding HTTP.",
    buckets=_LATENCY_BUCKETS,
)
# The same decisions' thread CPU time and their wait for the engine's lock (issue #29): wall
# time minus CPU time is time the deciding thread was ready but not running (another thread
# held the GIL or the host's cores were busy), which a busy host adds to the tail and no
# change to the engine removes; the lock wait is what snapshot installs and the shared view's
# merges cost a decision.
DECISION_CPU = Histogram(
    "locus_decision_cpu_seconds",
    "Thread CPU time per placement decision (the engine's, as locus_decision_latency_seconds).",
    buckets=_LATENCY_BUCKETS,
)
DECISION_LOCK_WAIT = Histogram(
    "locus_decision_lock_wait_seconds",
    "Time a placement decision waited for the engine's lock (snapshot installs, shared view "
    "merges).",
    buckets=(0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05),
)
DECISIONS = Counter("locus_decisions_total", "Placement decisions made.", ["policy", "node"])
NO_CANDIDATE = Counter(
    "locus_decisions_unplaceable_total", "Requests no node could serve (answered 503)."
)
FALLBACKS = Counter(
    "locus_fallbacks_total",
    "Decisions where the engine fell back from the configured policy to the fallback "
    "heuristic, by reason (scorer_error, scorer_slow).",
    ["reason"],
)
# Known label values start at 0, so a dashboard's rate() works before the first fallback.
for _reason in ("scorer_error", "scorer_slow"):
    FALLBACKS.labels(reason=_reason)
BREAKER_TRIPS = Counter("locus_breaker_trips_total", "Circuit breakers opened.", ["node"])
BREAKER_OPEN = Gauge(
    "locus_breakers_open", "Nodes whose breaker is open now.", multiprocess_mode="max"
)
OUTCOMES = Counter("locus_outcomes_total", "Outcomes reported for decisions.", ["ok"])
for _ok in ("true", "false"):
    OUTCOMES.labels(ok=_ok)
SHARED_VIEW_UP = Gauge(
    "locus_shared_view_up",
    "1 while this process shares its live view through Redis (docs/deploying.md), 0 while "
    "it decides from its own view because Redis is unreachable.",
    multiprocess_mode="livemin",
)
SHARED_VIEW_MERGED = Counter(
    "locus_shared_view_merged_total", "Other deciders' sends merged into this process's view."
)
SHARED_VIEW_LAG = Histogram(
    "locus_shared_view_lag_seconds",
    "Age of another decider's send when this process merged it (publish-to-visible delay, "
    "clocks of two hosts apart by their skew).",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
SNAPSHOT_AGE = Gauge(
    "locus_snapshot_age_seconds", "Age of the engine's inventory snapshot.", multiprocess_mode="max"
)
RECORDS_DROPPED = Counter(
    "locus_decision_records_dropped_total",
    "Decision records dropped because the database stayed unavailable and the buffer filled "
    "(without a record journal: with one they wait in it).",
)

RECORDS_REFUSED = Counter(
    "locus_decision_records_refused_total",
    "Decision records and outcomes the database refused (a value it cannot store); each is "
    "logged once and dropped, and the rest of its batch is written.",
    ["kind"],
)
for _kind in ("record", "outcome"):
    RECORDS_REFUSED.labels(kind=_kind)
RECORDER_BACKLOG = Gauge(
    "locus_decision_recorder_backlog",
    "Decision records and outcomes waiting to be written.",
    multiprocess_mode="livesum",
)
RECORDER_OLDEST_SECONDS = Gauge(
    "locus_decision_recorder_stalled_seconds",
    "Seconds since the recorder last wrote, while records wait (0 when nothing waits).",
    multiprocess_mode="max",
)


# Gauges measured when /metrics is scraped (the same in every process, so kept out of the
# multiprocess files): telemetry freshness, the ingest inbox, SLO objectives and queue backlogs
# (docs/operations.md).
SCRAPE_TIME = CollectorRegistry(auto_describe=False)
SCRAPE_TIME.register(FreshnessCollector())
SCRAPE_TIME.register(InboxCollector())
SCRAPE_TIME.register(SloObjectiveCollector())
SCRAPE_TIME.register(QueueBacklogCollector())


def metrics_view(request: HttpRequest) -> HttpResponse:
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        registry = CollectorRegistry()
        prom_multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    body = generate_latest(registry) + generate_latest(SCRAPE_TIME)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
