"""GET /api/v1/nodes/{name}/why: a red node's page says why — its open breach, breaker,
stale telemetry, drain, and its recent decisions flagged when placed in the breach."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from console.inventory.models import Node
from console.placement.engine.runtime import runtime
from console.placement.models import BreakerEvent, DecisionRecord
from telemetry.models import BreachNode, SlaBreach

pytestmark = pytest.mark.django_db


def _breach(
    node: str, *, minutes_ago: float, resolved: bool = False, slo: str = "interactive"
) -> SlaBreach:
    now = timezone.now()
    breach = SlaBreach.objects.create(
        slo=slo, metric="within_targets", severity="page",
        status="resolved" if resolved else "open", objective=0.99, threshold=14.4,
        observed=30.0, worst=30.0, samples=200, opened_at=now - timedelta(minutes=minutes_ago),
        resolved_at=now - timedelta(minutes=1) if resolved else None,
    )  # fmt: skip
    BreachNode.objects.create(
        breach=breach, node=node, model="llama-3.1-8b", requests=80, bad=40, burn_rate=50.0
    )
    return breach


def _decision(i: int, node: str, minutes_ago: float, **outcome: Any) -> None:
    DecisionRecord.objects.create(
        id=f"n{i}", created_at=timezone.now() - timedelta(minutes=minutes_ago),
        source_site="fra-core", model="llama-3.1-8b", slo="interactive", prompt_tokens=1,
        max_output_tokens=1, node=node, node_site="fra-core", policy_name="weighted-score",
        policy_version="builtin", latency_us=1.0, receipt={"v": 2}, **outcome,
    )  # fmt: skip


def test_a_red_node_says_why(fleet: Any, client_for: Any) -> None:
    breach = _breach("fra-h100-1", minutes_ago=10)
    _breach("muc-l4-1", minutes_ago=10, slo="batch")  # another node's is not this node's
    Node.objects.filter(name="fra-h100-1").update(state="draining", state_reason="disk errors")
    _decision(1, "fra-h100-1", 12, ok=True, slo_met=True, outcome_at=timezone.now())
    _decision(2, "fra-h100-1", 5, ok=False, slo_met=False, outcome_at=timezone.now())
    BreakerEvent.objects.create(
        node="fra-h100-1",
        from_state="closed",
        to_state="open",
        reason="3 failures in a row",
        at=timezone.now(),
    )

    body = client_for("viewer").get("/api/v1/nodes/fra-h100-1/why").json()

    assert [b["breach_id"] for b in body["breaches"]] == [breach.pk]
    assert body["breaches"][0]["open"] and body["breaches"][0]["burn_rate"] == 50.0
    kinds = [r["kind"] for r in body["reasons"]]
    # Worst first: the page-level breach, then the never-reported telemetry and the drain.
    assert kinds[0] == "breach" and {"stale", "state", "outcomes"} <= set(kinds)
    assert f"(#{breach.pk})" in body["reasons"][0]["text"]
    assert "disk errors" in next(r["text"] for r in body["reasons"] if r["kind"] == "state")
    assert body["telemetry"] is None
    assert body["breaker"]["last_change"]["to_state"] == "open"
    recent = {d["id"]: d for d in body["recent_decisions"]}
    assert recent["n2"]["picked_in_breach"] == breach.pk  # placed while the breach was open
    assert recent["n1"]["picked_in_breach"] is None  # placed before it opened
    assert body["outcomes"]["decisions"] == 2 and body["outcomes"]["picked_in_breach"] == 1
    assert body["outcomes"]["failed"] == 1


def test_a_healthy_node_has_no_reasons(
    fleet: Any, client_for: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sample = {"node": "muc-l4-1", "ts": timezone.now().isoformat(), "metrics": {"running": 3}}
    with django_capture_on_commit_callbacks(execute=True):  # the ingest runs after commit
        pushed = client_for("service").post(
            "/api/v1/telemetry/samples", {"samples": [sample]}, format="json"
        )
    assert pushed.status_code == 202, pushed.content
    runtime().refresh()
    _breach("muc-l4-1", minutes_ago=60, resolved=True)
    body = client_for("viewer").get("/api/v1/nodes/muc-l4-1/why").json()
    assert body["reasons"] == []
    assert body["telemetry"]["stale"] is False
    assert body["breaker"]["state"] == "closed"
    assert [b["open"] for b in body["breaches"]] == [False]  # resolved within the day: shown


def test_an_unknown_node_is_a_404(db: Any, client_for: Any) -> None:
    response = client_for("viewer").get("/api/v1/nodes/atlantis-1/why")
    assert response.status_code == 404
    assert "atlantis-1" in response.json()["message"]
