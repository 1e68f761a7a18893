"""Prometheus counters of telemetry ingest, served at /metrics with the engine's (the
gauges measured at scrape time are `collectors.py`).

The endpoint is part of the fixed interfaces (docs/contracts.md §4).

Registered in prometheus_client's default registry, like console/placement/metrics.py, so the
same /metrics view (and its multiprocess mode) serves them.
"""

from __future__ import annotations

from prometheus_client import Counter

SERIES_SKIPPED = Counter(
    "locus_telemetry_series_skipped_total",
    "Pushed series not stored because no known node matched them (remote-write series of "
    "other instances, or without an instance/node label), by ingest kind.",
    ["kind"],
)
SAMPLES_REFUSED = Counter(
    "locus_telemetry_values_refused_total",
    "Values of accepted batches the worker could not store and dropped, keeping the batch's "
    "other values: the database refused their series, or they fail today's checks (a NUL "
    "character) in a batch accepted before those checks.",
)
SLO_REQUESTS = Counter(
    "locus_slo_requests_total",
    "Reported outcomes of each SLO's requests: good (served ok within every target), missed "
    "(served ok, a target missed) or failed; what the burn-rate rules of "
    "docs/prometheus/alerts.yaml and telemetry/slo_rules.py count.",
    ["slo", "result"],
)
