"""Scraping the exporter URLs listed on nodes, with a timeout and per-target backoff.

A target that fails waits interval x 2^(failures - 1) (capped at
LOCUS_TELEMETRY_SCRAPE_BACKOFF_MAX_SECONDS, with +-20% jitter so many dead targets do not
retry in step) before it is tried again; one success resets it. What a scrape returns goes
through the same durable path as a push (`batch_accept`).
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass

import requests

from console.api.errors import ApplicationError
from console.inventory.models import Node
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


def scrape_targets() -> list[tuple[str, str]]:
    """(node, url) for every exporter URL on every node that is not down."""
    rows = Node.objects.exclude(state="down").values_list("name", "exporter_urls")
    return [(name, url) for name, urls in rows for url in (urls or []) if isinstance(url, str)]


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
