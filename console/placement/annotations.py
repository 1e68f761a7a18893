"""What happened to the fleet, as marks on its time series: drains, cordons and the other
node state changes (the inventory's audit trail), breaker moves (`BreakerEvent`) and SLA
breaches opening and resolving. A chart that shows latency rising says, on the same axis,
that a node was drained or a breach opened there (issue #28, item 6)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q

from console.inventory.selectors import state_changes_between
from console.placement.models import BreakerEvent
from telemetry.selectors import breach_list

# Per kind, so a flapping breaker cannot crowd the drains off the chart.
EVENT_LIMIT = 200


def series_events(*, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Node state changes, breaker moves and breaches opening or resolving in [start, end),
    oldest first: `{t, kind, subject, text}` (t in epoch seconds)."""
    events: list[dict[str, Any]] = []
    for change in state_changes_between(start=start, end=end, limit=EVENT_LIMIT):
        why = f": {change.reason}" if change.reason else ""
        events.append({
            "t": change.at.timestamp(), "kind": change.action, "subject": change.node.name,
            "text": f"{change.action.replace('_', ' ')} {change.node.name} by {change.actor}{why}",
        })  # fmt: skip
    moves = BreakerEvent.objects.filter(at__gte=start, at__lt=end).order_by("at", "id")
    for move in moves[:EVENT_LIMIT]:
        events.append({
            "t": move.at.timestamp(), "kind": "breaker", "subject": move.node,
            "text": f"breaker {move.node}: {move.from_state} → {move.to_state} ({move.reason})",
        })  # fmt: skip
    in_range = Q(opened_at__gte=start, opened_at__lt=end) | Q(
        resolved_at__gte=start, resolved_at__lt=end
    )
    for b in breach_list().filter(in_range).order_by("opened_at", "id")[:EVENT_LIMIT]:
        level = f"{b.severity} " if b.severity else ""
        if start <= b.opened_at < end:
            events.append({
                "t": b.opened_at.timestamp(), "kind": "breach_open", "subject": b.slo,
                "text": f"{level}breach #{b.pk} of {b.slo} opened",
            })  # fmt: skip
        if b.resolved_at is not None and start <= b.resolved_at < end:
            events.append({
                "t": b.resolved_at.timestamp(), "kind": "breach_resolved", "subject": b.slo,
                "text": f"{level}breach #{b.pk} of {b.slo} resolved",
            })  # fmt: skip
    return sorted(events, key=lambda e: e["t"])
