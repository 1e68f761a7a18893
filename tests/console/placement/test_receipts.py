"""Every decision record keeps a receipt (top candidates, rejections by reason) that any
viewer reads back through GET /api/v1/decisions/{id}."""

from __future__ import annotations

from typing import Any

import pytest

from console.inventory.models import Node
from console.placement.engine.core import RECEIPT_CANDIDATES
from console.placement.models import DecisionRecord
from tests.console.placement.test_decisions import INTERACTIVE

pytestmark = pytest.mark.django_db


def test_a_viewer_reads_why_a_past_decision_went_where_it_did(
    mixed_fleet: Any, client_for: Any
) -> None:
    Node.objects.filter(name="fra-h100-2").update(state="draining")
    Node.objects.filter(name="fra-h100-3").update(state="cordoned")
    mixed_fleet.refresh()
    decided = client_for("service").post("/api/v1/placements", INTERACTIVE, format="json").json()
    assert "candidates" not in decided  # the answer stays small without explain
    mixed_fleet.recorder.flush()

    response = client_for("viewer").get(f"/api/v1/decisions/{decided['decision_id']}")
    assert response.status_code == 200, response.content
    receipt = response.json()["receipt"]
    names = [c["node"] for c in receipt["candidates"]]
    assert names[0] == decided["node"] and names[1:] == decided["fallbacks"][: len(names) - 1]
    # muc-l4-1, fra-h100-1, fra-h100-4, fra-h100-5 remain: four candidates, all kept.
    assert len(names) == 4
    scores = [c["score"] for c in receipt["candidates"]]
    assert scores == sorted(scores, reverse=True)
    for candidate in receipt["candidates"]:
        assert 0 < candidate["ttft_ms"] <= candidate["e2e_ms"]
        assert candidate["cost_usd"] > 0
    assert receipt["rejected"] == {
        "node_draining": 1,
        "node_cordoned": 1,
        "residency": 1,
        "model_not_served": 1,
        "unreachable": 1,
    }


def test_a_receipt_keeps_only_the_top_candidates(mixed_fleet: Any, client_for: Any) -> None:
    client_for("service").post(
        "/api/v1/placements", {**INTERACTIVE, "source": "us-batch"}, format="json"
    )
    mixed_fleet.recorder.flush()
    record = DecisionRecord.objects.get()
    # The batch SLO has no residency: seven llama nodes are reachable, five are kept.
    assert len(record.receipt["candidates"]) == RECEIPT_CANDIDATES
    assert sum(record.receipt["rejected"].values()) == 2


def test_a_record_from_before_receipts_reads_with_an_empty_receipt(
    example_engine: Any, client_for: Any
) -> None:
    client_for("service").post("/api/v1/placements", INTERACTIVE, format="json")
    example_engine.recorder.flush()
    record = DecisionRecord.objects.get()
    DecisionRecord.objects.filter(pk=record.pk).update(receipt={})
    body = client_for("viewer").get(f"/api/v1/decisions/{record.pk}").json()
    assert body["receipt"] == {}
