"""Scraping the exporter URLs listed on nodes, with a timeout and per-target backoff.

A target that fails waits interval x 2^(failures - 1) (capped at
LOCUS_TELEMETRY_SCRAPE_BACKOFF_MAX_SECONDS, with +-20% jitter so many dead targets do not
retry in step) before it is tried again; one success resets it. What a scrape returns goes
through the same durable path as a push (`batch_accept`). `scrapes_enqueue` (beat's
`scrape_all`) sends one `scrape_one` task per exporter URL.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import asdict, dataclass
from typing import Any

import requests
from celery import shared_task

from console.api.errors import ApplicationError
from console.inventory.selectors import node_exporter_urls
from telemetry import conf
from telemetry.models import BatchKind
from telemetry.services import batch_accept
from telemetry.store import get_store

logger = logging.getLogger(__name__)
# Ask for the classic text format: it is what prometheus_client's parser reads.
_ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"


@dataclass(frozen=True)
class ScrapeOutcome:
    node: str
    url: str
    status: str  # "ok" | "failed" | "backoff"
    detail: str = ""
    batch_id: int | None = None


@shared_task(name="telemetry.scrape_one")
def scrape_one(node: str, url: str) -> dict[str, Any]:
    """One exporter's scrape. Declared here, not in tasks.py: beat's `scrape_all` fans out to
    it, so it sits below it."""
    return asdict(scrape_target(node=node, url=url))


def scrapes_enqueue() -> int:
    """One `scrape_one` task per exporter URL, so a slow target delays only itself; returns
    how many were sent."""
    targets = node_exporter_urls()
    for node, url in targets:
        scrape_one.delay(node, url)
    return len(targets)


def _backoff_key() -> str:
    return f"{get_store().prefix}:scrape"


def _backoff(url: str) -> tuple[int, float]:
    raw = get_store().hgetall_many([_backoff_key()])[0].get(url)
    if not raw:
        return 0, 0.0
    failures, _, next_at = raw.partition("|")
    return int(failures), float(next_at)


def scrape_target(*, node: str, url: str, now: float | None = None) -> ScrapeOutcome:
    """Scrape one exporter unless it is backing off; store what it returned."""
    now = time.time() if now is None else now
    failures, next_at = _backoff(url)
    if now < next_at:
        return ScrapeOutcome(node, url, "backoff", f"next try in {next_at - now:.0f} s")
    try:
        response = requests.get(
            url, timeout=conf.scrape_timeout_seconds(), headers={"Accept": _ACCEPT}
        )
        response.raise_for_status()
        accepted = batch_accept(kind=BatchKind.PROMETHEUS, body=response.content, node=node)
    except (requests.RequestException, ApplicationError) as exc:
        failures += 1
        delay = min(
            conf.scrape_backoff_max_seconds(),
            conf.scrape_interval_seconds() * 2 ** (failures - 1),
        ) * random.uniform(0.8, 1.2)  # noqa: S311 - jitter, not security
        get_store().hset(_backoff_key(), {url: f"{failures}|{now + delay!r}"})
        logger.info("scrape of %s for %s failed (%s); retry in %.0f s", url, node, exc, delay)
        return ScrapeOutcome(node, url, "failed", str(exc))
    if failures:
        get_store().hdel(_backoff_key(), [url])
    return ScrapeOutcome(node, url, "ok", batch_id=accepted.batch_id)
