"""A receipt's `picked_in_breach` flag: was the picked node in an open SLO breach when it was
picked (issue #28, "the receipt flags a node picked while in an open breach")?

Worked out when records are read, not when decisions are made: the engine decides on its
snapshot and never waits on breaches, and a record keeps what the engine saw. One query covers
a page of records (`breaches_around`), then each record is flagged from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from telemetry.selectors import BreachInterval, breach_intervals

# A page-level breach is the one to name when a node was in several at once.
_SEVERITY_RANK = {"page": 0, "ticket": 1}


def breaches_around(picks: Sequence[tuple[str, datetime]]) -> list[BreachInterval]:
    """The breaches open on any of these (node, decided at) picks' nodes during their span:
    one query for a page of records, read when the records are (the engine's decisions do
    not wait on breaches, and a record keeps what the engine saw)."""
    if not picks:
        return []
    times = [at for _, at in picks]
    return breach_intervals(nodes={node for node, _ in picks}, since=min(times), until=max(times))


def picked_in_breach(
    *, node: str, at: datetime, breaches: Sequence[BreachInterval]
) -> dict[str, Any] | None:
    """The open breach naming `node` when it was picked at `at` (the most severe, then the
    oldest, if several), as the receipt's `picked_in_breach`; None when it was in none."""
    open_then = [b for b in breaches if b.node == node and b.open_at(at)]
    if not open_then:
        return None
    b = min(open_then, key=lambda b: (_SEVERITY_RANK.get(b.severity, 2), b.opened_at))
    return {
        "breach_id": b.breach_id,
        "slo": b.slo,
        "severity": b.severity,
        "opened_at": b.opened_at.isoformat(),
        "open_breaches": len(open_then),
    }
