"""Writes and events of placement, off the decision path: breaker moves (stored, shared with
the other server processes, published), outcomes fed to the SLO windows, live events."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.core.cache import cache

from console.live.events import send_event
from console.outage import OutageLog
from console.placement.models import BreakerEvent
from console.placement.selectors import BREAKER_CACHE_KEY, RecentDecision
from optimizer.decide.filters.breakers import OPEN
from telemetry.services import outcome_record

logger = logging.getLogger(__name__)
# A cache (Redis) outage is logged once, with a recovery line, not per breaker move.
shared_breakers_outage = OutageLog("shared breaker state (cache)", logger)


def breaker_move_record(*, node: str, before: str, after: str, why: str, at: datetime) -> None:
    """Store a breaker's move, share the open set with the other processes, publish it."""
    BreakerEvent.objects.create(
        node=node, from_state=before, to_state=after, reason=why[:300], at=at
    )
    try:
        opened: dict[str, float] = dict(cache.get(BREAKER_CACHE_KEY) or {})
        if after == OPEN:
            opened[node] = at.timestamp()
        else:
            opened.pop(node, None)
        cache.set(BREAKER_CACHE_KEY, opened, timeout=None)
    except Exception:
        shared_breakers_outage.failed(f"breaker state of {node} not shared")
    else:
        shared_breakers_outage.recovered()
    event_publish(
        "breaker",
        {
            "node": node,
            "from_state": before,
            "to_state": after,
            "reason": why,
            "ts": at.isoformat(),
        },
    )


def slo_windows_feed(
    *,
    recent: RecentDecision,
    ttft_ms: float | None,
    e2e_ms: float | None,
    ok: bool,
    at: datetime,
) -> None:
    """Count a decision's outcome in the SLO windows of its SLO, model and node."""
    assert recent.slo is not None
    outcome_record(
        slo=recent.slo,
        model=recent.model,
        node=recent.node,
        ttft_ms=ttft_ms,
        e2e_ms=e2e_ms,
        ok=ok,
        at=at,
    )


def event_publish(event_type: str, data: dict[str, Any]) -> None:
    """Send a live event; a failure drops the event (and is logged), never the caller."""
    try:
        send_event(event_type, data)
    except Exception:
        logger.warning("live event %s dropped", event_type, exc_info=True)
