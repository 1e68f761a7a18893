"""Gauges of telemetry measured when /metrics is scraped: node freshness, the inbox of
accepted batches and each SLO's objectives. `console/placement/metrics.py` registers them
beside the engine's metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from console.inventory.selectors import node_names, slo_list
from telemetry import conf
from telemetry.models import TelemetryBatch
from telemetry.slo_rules import SloTargets
from telemetry.state import read_nodes

logger = logging.getLogger(__name__)


class FreshnessCollector(Collector):
    """Telemetry age per node and the count of stale nodes, measured at scrape time (issue 13,
    finding 4: the fleet went stale for minutes with nothing to alert on).

    A node of the inventory that never reported has no age and counts as stale, as
    `freshness_check` judges it. Reading costs one query for the node names and one read of
    the latest-state store; when either is down the scrape carries neither gauge rather than
    a false "all fresh".
    """

    def describe(self) -> list[GaugeMetricFamily]:
        return []  # nothing to collect at registration time

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            names = node_names()
            latest = read_nodes(names)
        except Exception as exc:
            logger.debug("telemetry freshness unavailable for /metrics: %s", exc)
            return
        now = timezone.now()
        bound = conf.stale_seconds()
        age = GaugeMetricFamily(
            "locus_telemetry_age_seconds",
            "Seconds since the node's newest telemetry value (nodes that never reported have "
            "none).",
            labels=["node"],
        )
        stale = 0
        for name in sorted(names):
            telemetry = latest.get(name)
            if telemetry is None:
                stale += 1
                continue
            seconds = telemetry.age_s(now)
            age.add_metric([name], seconds)
            stale += seconds > bound
        yield age
        yield GaugeMetricFamily(
            "locus_telemetry_stale_nodes",
            "Inventory nodes whose telemetry is older than LOCUS_TELEMETRY_STALE_SECONDS or "
            "missing.",
            value=stale,
        )


class InboxCollector(Collector):
    """Accepted telemetry batches not yet processed: how many, and how long the oldest has
    waited. A batch answered 202 must be stored; one that stays here is stuck (a dead or
    starved worker, or a batch the worker keeps failing), which these gauges let an alert see.
    One aggregate query per scrape (processed batches leave the inbox)."""

    def describe(self) -> list[GaugeMetricFamily]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            inbox = TelemetryBatch.objects.aggregate(n=Count("id"), oldest=Min("received_at"))
        except Exception as exc:
            logger.debug("telemetry inbox unavailable for /metrics: %s", exc)
            return
        oldest = inbox["oldest"]
        yield GaugeMetricFamily(
            "locus_telemetry_inbox_batches",
            "Accepted telemetry batches waiting to be processed.",
            value=inbox["n"],
        )
        yield GaugeMetricFamily(
            "locus_telemetry_inbox_oldest_seconds",
            "Seconds the oldest unprocessed telemetry batch has waited (0 when none waits).",
            value=0.0 if oldest is None else max(0.0, (timezone.now() - oldest).total_seconds()),
        )


class SloObjectiveCollector(Collector):
    """Each SLO's objective per SLI (telemetry/slo_rules.py), for the burn-rate alert rules:
    0.95 of requests within targets (p95 targets), and 1 - max_error_rate of requests served
    ok for SLOs that set one. One query per scrape."""

    def describe(self) -> list[GaugeMetricFamily]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            slos = list(
                slo_list().values_list("name", "ttft_p95_ms", "e2e_p95_ms", "max_error_rate")
            )
        except Exception as exc:
            logger.debug("SLOs unavailable for /metrics: %s", exc)
            return
        gauge = GaugeMetricFamily(
            "locus_slo_objective",
            "Share of an SLO's requests that must be good, per SLI (within_targets, error_rate).",
            labels=["slo", "sli"],
        )
        for name, ttft, e2e, max_error_rate in sorted(slos):
            for sli in SloTargets(ttft, e2e, max_error_rate).slis():
                gauge.add_metric([name, sli.name], sli.objective)
        yield gauge
