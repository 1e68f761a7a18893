"""The fleet series' events (console/placement/annotations.py): a drain, a breaker move and a
breach opening and resolving are marked on GET /api/v1/series/fleet, each at its time; what
happened outside the range is not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from console.inventory.models import Node, NodeStateChange
from console.placement.models import BreakerEvent
from telemetry.models import SlaBreach

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_drains_breakers_and_breaches_are_marked(fleet: Any, client_for: Any) -> None:
    node = Node.objects.get(name="fra-h100-1")
    NodeStateChange.objects.create(
        node=node, action="drain", from_state="active", to_state="draining",
        reason="NVLink errors", actor="otto", at=T0 + timedelta(minutes=5),
    )  # fmt: skip
    NodeStateChange.objects.create(
        node=node, action="uncordon", from_state="draining", to_state="active", actor="otto",
        at=T0 - timedelta(hours=2),  # before the range
    )  # fmt: skip
    BreakerEvent.objects.create(
        node="muc-l4-1", from_state="closed", to_state="open", reason="3 failures",
        at=T0 + timedelta(minutes=10),
    )  # fmt: skip
    SlaBreach.objects.create(
        slo="interactive", metric="within_targets", severity="page", status="resolved",
        objective=0.99, threshold=14.4, observed=20.0, worst=20.0, samples=50,
        opened_at=T0 + timedelta(minutes=20), resolved_at=T0 + timedelta(minutes=40),
    )  # fmt: skip
    body = (
        client_for("viewer")
        .get(
            "/api/v1/series/fleet",
            {"from": T0.isoformat(), "to": (T0 + timedelta(hours=1)).isoformat()},
        )
        .json()
    )
    events = [(e["t"] - T0.timestamp(), e["kind"], e["subject"]) for e in body["events"]]
    assert events == [
        (300.0, "drain", "fra-h100-1"),
        (600.0, "breaker", "muc-l4-1"),
        (1200.0, "breach_open", "interactive"),
        (2400.0, "breach_resolved", "interactive"),
    ]
    assert "NVLink errors" in body["events"][0]["text"]
    assert body["events"][1]["text"] == "breaker muc-l4-1: closed → open (3 failures)"


def test_a_quiet_range_has_no_events(fleet: Any, client_for: Any) -> None:
    end = timezone.now()
    body = (
        client_for("viewer")
        .get("/api/v1/series/fleet", {"from": (end - timedelta(hours=1)).isoformat()})
        .json()
    )
    assert body["events"] == []
