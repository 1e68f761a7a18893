"""Fresh or stale: a node whose newest telemetry is older than LOCUS_TELEMETRY_STALE_SECONDS.

Each change is announced once on the live stream as "node.freshness": on ingest (stale ->
fresh) and by a beat task (fresh -> stale, and nodes that never reported). The last
announced value lives in the shared store so several processes do not repeat it.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from console.inventory.selectors import node_names
from console.live.events import send_event
from telemetry import conf, state


def _announce(node: str, fresh: bool, age_s: float | None, now: datetime) -> None:
    state.set_freshness(node, fresh)
    send_event(
        "node.freshness",
        {
            "node": node,
            "fresh": fresh,
            "age_s": None if age_s is None else round(age_s, 3),
            "ts": now.isoformat(),
        },
    )


def freshness_note_ingest(*, newest: dict[str, datetime], now: datetime | None = None) -> None:
    """Announce nodes that just became fresh (called after their telemetry was stored)."""
    if not newest:
        return
    now = now or timezone.now()
    flags = state.freshness_flags()
    bound = conf.stale_seconds()
    for node, ts in newest.items():
        age = max(0.0, (now - ts).total_seconds())
        if age <= bound and flags.get(node) is not True:
            _announce(node, True, age, now)


def freshness_check(*, now: datetime | None = None) -> dict[str, bool]:
    """Compare every inventory node's telemetry age with the bound; announce changes."""
    now = now or timezone.now()
    names = node_names()
    latest = state.read_nodes(names)
    flags = state.freshness_flags()
    result: dict[str, bool] = {}
    for name in names:
        telemetry = latest.get(name)
        fresh = telemetry is not None and not telemetry.is_stale(now)
        result[name] = fresh
        if flags.get(name) is not fresh:
            _announce(name, fresh, None if telemetry is None else telemetry.age_s(now), now)
    return result
