"""Every decision record keeps a receipt (top candidates, rejections by reason) that any
viewer reads back through GET /api/v1/decisions/{id}."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from console.inventory.models import Node
from console.inventory.services import topology_import
from console.placement.engine.core import RECEIPT_CANDIDATES
from console.placement.engine.runtime import runtime
from console.placement.models import DecisionRecord
from optimizer.decide.scorers.trust_region import VERDICTS
from optimizer.topology_files import parse_topology
from telemetry.models import BreachNode, SlaBreach
from tests.console.placement.conftest import MIXED_FLEET
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
    assert "guard" not in receipt  # a heuristic has no trust region
    assert receipt["rejected"] == {
        "node_draining": 1,
        "node_cordoned": 1,
        "residency": 1,
        "model_not_served": 1,
        "unreachable": 1,
    }


def test_a_learned_policys_receipt_and_explain_show_what_its_trust_region_did(
    db: Any, engine_settings: Any, client_for: Any
) -> None:
    """The generalist served inside its trust region (`generalist-guarded`):
    every receipt, and an explained answer, say what the region did to that decision and
    how many decisions of each verdict the serving process has seen."""
    engine_settings.LOCUS_DEFAULT_POLICY = "generalist-guarded"
    topology_import(topology=parse_topology(MIXED_FLEET))
    rt = runtime()
    rt.refresh()
    service = client_for("service")
    first = service.post("/api/v1/placements", INTERACTIVE, format="json").json()
    explained = service.post(
        "/api/v1/placements", {**INTERACTIVE, "explain": True}, format="json"
    ).json()
    assert explained["policy"]["name"] == "generalist-guarded"
    guard = explained["guard"]
    assert guard["anchor"] == "weighted-score"
    assert guard["verdict"] in VERDICTS
    assert sum(guard["counts"].values()) == 2 and guard["counts"][guard["verdict"]] >= 1
    rt.recorder.flush()
    receipt = (
        client_for("viewer").get(f"/api/v1/decisions/{first['decision_id']}").json()["receipt"]
    )
    assert receipt["guard"]["anchor"] == "weighted-score"
    assert sum(receipt["guard"]["counts"].values()) == 1


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


def _breach(node: str, opened: datetime, resolved: datetime | None, severity: str) -> int:
    breach = SlaBreach.objects.create(
        slo="interactive",
        metric="within_targets",
        severity=severity,
        status="resolved" if resolved else "open",
        objective=0.99,
        threshold=14.4,
        observed=20.0,
        worst=20.0,
        samples=100,
        opened_at=opened,
        resolved_at=resolved,
    )
    BreachNode.objects.create(
        breach=breach, node=node, model="llama-3.1-8b", requests=50, bad=20, burn_rate=40.0
    )
    return breach.pk


def test_a_receipt_flags_a_node_picked_while_in_an_open_breach(client_for: Any) -> None:
    """Computed when the record is read, from the breach's open interval: the engine's
    decisions are not touched."""
    t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    ticket = _breach("fra-h100-1", t0 + timedelta(minutes=5), t0 + timedelta(minutes=30), "ticket")
    page = _breach("fra-h100-1", t0 + timedelta(minutes=10), t0 + timedelta(minutes=20), "page")
    _breach("muc-l4-1", t0, None, "page")  # another node's breach flags nothing here
    receipt = {"v": 2, "candidates": [], "rejected": {}}
    for i, minute in enumerate((1, 7, 15, 25, 40)):
        DecisionRecord.objects.create(
            id=f"r{i}", created_at=t0 + timedelta(minutes=minute), source_site="fra",
            model="llama-3.1-8b", slo="interactive", prompt_tokens=1, max_output_tokens=1,
            node="fra-h100-1", node_site="fra", policy_name="weighted-score",
            policy_version="builtin", latency_us=1.0, receipt=receipt,
        )  # fmt: skip
    viewer = client_for("viewer")
    listed = viewer.get("/api/v1/decisions?node=fra-h100-1&order=oldest").json()["results"]
    flags = [r["receipt"]["picked_in_breach"] for r in listed]
    assert flags[0] is None and flags[4] is None  # before the first opened, after both resolved
    assert flags[1]["breach_id"] == ticket and flags[3]["breach_id"] == ticket
    # Both open at minute 15: the page-level one is named, and the count says there are two.
    assert flags[2]["breach_id"] == page and flags[2]["severity"] == "page"
    assert flags[2]["open_breaches"] == 2
    # A record read alone says the same.
    alone = viewer.get("/api/v1/decisions/r2").json()["receipt"]["picked_in_breach"]
    assert alone == flags[2]
