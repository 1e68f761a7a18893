"""Celery tasks that beat starts: each takes plain JSON and calls one service. The tasks
these fan out to sit below them, beside their services: `scraping.scrape_one` (one exporter)
and `ingest.ingest_batch` (one pushed or scraped batch)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from celery import shared_task
from django.utils import timezone

from telemetry import maintenance, services
from telemetry.breaches import breaches_evaluate
from telemetry.freshness import freshness_check
from telemetry.scraping import scrapes_enqueue


@shared_task(name="telemetry.redeliver_inbox")
def redeliver_inbox(older_than_s: float | None = None) -> int:
    return services.batch_redeliver_stale(older_than_s=older_than_s)


@shared_task(name="telemetry.scrape_all")
def scrape_all() -> int:
    """One scrape task per exporter URL, so a slow target delays only itself."""
    return scrapes_enqueue()


@shared_task(name="telemetry.check_freshness")
def check_freshness() -> dict[str, bool]:
    return freshness_check()


@shared_task(name="telemetry.evaluate_slos")
def evaluate_slos() -> int:
    """Evaluate every SLO's burn-rate rules on this worker's clock (so breaches open and
    resolve while no outcome arrives); returns how many breaches opened or resolved."""
    return len(breaches_evaluate(now=timezone.now()))


@shared_task(name="telemetry.rollup")
def rollup() -> dict[str, Any]:
    return asdict(maintenance.rollup_recent())


@shared_task(name="telemetry.maintain_partitions")
def maintain_partitions() -> dict[str, Any]:
    return asdict(maintenance.partitions_maintain())


@shared_task(name="telemetry.retention")
def retention() -> dict[str, Any]:
    return asdict(maintenance.retention_apply())
