"""A decision's receipt: the compact "why" every decision record keeps (docs/dashboard.md).

Built from what the engine's `Decision` already holds (its top candidates in the receipt's
compact form, `optimizer.decide.explain.receipt_candidates`, and the rejected nodes with
their reasons); the recorder thread serialises it with the record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from console.placement.engine.core import RECEIPT_CANDIDATES, Decision
from telemetry.selectors import BreachInterval, breach_intervals

# 2 added each candidate's `prefill_ms` (cost attribution, console/policies/attribution.py).
RECEIPT_VERSION = 2


def receipt_of(decision: Decision) -> dict[str, Any]:
    """`{"v", "candidates": [{node, site, score, ttft_ms, e2e_ms, prefill_ms, cost_usd,
    kv_used, queue}],
    "rejected": {reason: count}}`: the best RECEIPT_CANDIDATES candidates in rank order and
    the rejected nodes counted by reason (not named: a receipt stays small on any fleet)."""
    return {
        "v": RECEIPT_VERSION,
        "candidates": decision.top[:RECEIPT_CANDIDATES],
        "rejected": dict(Counter(decision.rejected.values())),
    }


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
