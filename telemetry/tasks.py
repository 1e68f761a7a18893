"""Celery tasks: each takes ids or plain JSON and calls one service."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from celery import shared_task
from django.utils import timezone

from telemetry import maintenance, services
from telemetry.breaches import breaches_evaluate
from telemetry.freshness import freshness_check
from telemetry.scraping import scrape_target, scrape_targets


@shared_task(name="telemetry.ingest_batch")
def ingest_batch(batch_id: int) -> dict[str, Any] | None:
    """Process one inbox batch (idempotent: a redelivery finds it gone and does nothing)."""
    try:
        result = services.batch_process(batch_id=batch_id)
    except Exception as exc:
        services.batch_mark_failed(batch_id=batch_id, error=repr(exc))
        raise
    return (
        None
        if result is None
        else {
            "stored": result.stored,
            "refused": result.refused,
            "unmapped": result.unmapped,
            "dropped": dict(result.dropped),
        }
    )


@shared_task(name="telemetry.redeliver_inbox")
def redeliver_inbox(older_than_s: float | None = None) -> int:
    return services.batch_redeliver_stale(older_than_s=older_than_s)


@shared_task(name="telemetry.scrape_all")
def scrape_all() -> int:
    """Fan out one scrape task per exporter URL, so a slow target delays only itself."""
    targets = scrape_targets()
    for node, url in targets:
        scrape_one.delay(node, url)
    return len(targets)


@shared_task(name="telemetry.scrape_one")
def scrape_one(node: str, url: str) -> dict[str, Any]:
    return asdict(scrape_target(node=node, url=url))


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
