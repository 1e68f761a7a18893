"""POST /api/v1/placements and friends, through HTTP with a service key."""

from __future__ import annotations

from typing import Any

import pytest

from console.inventory.models import Node
from console.placement.engine.inputs import DecisionInput
from console.placement.engine.outcomes import Outcomes
from console.placement.models import DecisionRecord

pytestmark = pytest.mark.django_db

INTERACTIVE = {
    "model": "llama-3.1-8b",
    "source": "munich-app",
    "prompt_tokens": 1800,
    "max_output_tokens": 256,
}


def test_a_service_gets_a_node_site_fallbacks_and_policy(
    example_engine: Any, client_for: Any
) -> None:
    response = client_for("service").post("/api/v1/placements", INTERACTIVE, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["node"] in {"muc-l4-1", "fra-h100-1"}
    assert body["site"] == {"muc-l4-1": "muc-edge", "fra-h100-1": "fra-core"}[body["node"]]
    assert body["fallbacks"] == [{"muc-l4-1", "fra-h100-1"}.difference({body["node"]}).pop()]
    assert body["policy"] == {"name": "weighted-score", "version": "builtin"}
    assert len(body["decision_id"]) == 32


def test_every_constraint_rejects_with_its_reason(
    mixed_fleet: Any, client_for: Any, set_loads: Any
) -> None:
    Node.objects.filter(name="fra-h100-2").update(state="draining")
    Node.objects.filter(name="fra-h100-3").update(state="cordoned")
    Node.objects.filter(name="fra-h100-4").update(state="down")
    mixed_fleet.refresh()
    set_loads(fra_h100_1=(0, 0, 0.1, 3600.0), fra_h100_5=(0, 0, 0.1, 1.0))  # one hour old
    for _ in range(3):  # this config trips after 3 consecutive failures
        mixed_fleet.breakers.record("muc-l4-1", ok=False)
    body = (
        client_for("service")
        .post("/api/v1/placements", {**INTERACTIVE, "explain": True}, format="json")
        .json()
    )
    assert body["node"] == "fra-h100-5"
    assert {r["node"]: r["reason"] for r in body["rejected"]} == {
        "muc-l4-1": "breaker_open",
        "fra-h100-1": "stale_telemetry",
        "fra-h100-2": "node_draining",
        "fra-h100-3": "node_cordoned",
        "fra-h100-4": "node_down",
        "use-h100-1": "residency",
        "muc-qwen-1": "model_not_served",
        "island-h100-1": "unreachable",
    }


def test_only_stale_nodes_left_are_still_used(
    mixed_fleet: Any, client_for: Any, set_loads: Any
) -> None:
    Node.objects.exclude(name__in=["fra-h100-1", "muc-l4-1"]).update(state="down")
    mixed_fleet.refresh()
    set_loads(fra_h100_1=(0, 0, 0.0, 3600.0), muc_l4_1=(0, 0, 0.0, 3600.0))
    body = client_for("service").post("/api/v1/placements", INTERACTIVE, format="json").json()
    assert body["node"] in {"fra-h100-1", "muc-l4-1"}


def test_a_sequence_larger_than_any_kv_room_is_refused_with_503(
    mixed_fleet: Any, client_for: Any
) -> None:
    huge = {**INTERACTIVE, "prompt_tokens": 2_000_000}
    response = client_for("service").post("/api/v1/placements", huge, format="json")
    assert response.status_code == 503
    body = response.json()
    assert body["message"] == "No node may serve this request."
    assert body["reasons"]["fra-h100-1"] == "no_kv_room"
    assert body["reasons"]["use-h100-1"] == "residency"


def test_residency_is_never_broken(mixed_fleet: Any, client_for: Any) -> None:
    service = client_for("service")
    for i in range(40):
        node = service.post(
            "/api/v1/placements", {**INTERACTIVE, "prompt_tokens": 100 + i}, format="json"
        ).json()["node"]
        assert node != "use-h100-1"


def test_a_site_stands_in_for_an_unregistered_source(mixed_fleet: Any, client_for: Any) -> None:
    body = (
        client_for("service")
        .post(
            "/api/v1/placements",
            {
                "model": "llama-3.1-8b",
                "site": "use-cloud",
                "slo": "batch",
                "prompt_tokens": 10,
                "max_output_tokens": 10,
                "explain": True,
            },
            format="json",
        )
        .json()
    )
    assert body["node"] == "use-h100-1"
    assert body["candidates"][0]["node"] == "use-h100-1"
    assert body["candidates"][0]["rank"] == 1


def test_bad_input_gets_field_errors(mixed_fleet: Any, client_for: Any) -> None:
    service = client_for("service")
    both = service.post("/api/v1/placements", {**INTERACTIVE, "site": "muc-edge"}, format="json")
    assert both.status_code == 400 and "source" in both.json()["errors"]
    unknown = service.post("/api/v1/placements", {**INTERACTIVE, "model": "gpt-9"}, format="json")
    assert unknown.status_code == 400
    assert unknown.json()["errors"]["model"] == ["Unknown model 'gpt-9'."]
    negative = service.post(
        "/api/v1/placements", {**INTERACTIVE, "prompt_tokens": -1}, format="json"
    )
    assert "prompt_tokens" in negative.json()["errors"]


def test_explain_lists_scores_and_every_rejection(mixed_fleet: Any, client_for: Any) -> None:
    body = (
        client_for("service")
        .post("/api/v1/placements", {**INTERACTIVE, "explain": True}, format="json")
        .json()
    )
    ranks = [c["rank"] for c in body["candidates"]]
    assert ranks == sorted(ranks) and ranks[0] == 1
    scores = [c["score"] for c in body["candidates"]]
    assert scores == sorted(scores, reverse=True)
    assert body["candidates"][0]["node"] == body["node"]
    assert {r["node"] for r in body["rejected"]} == {"use-h100-1", "muc-qwen-1", "island-h100-1"}


def test_batch_answers_in_order_and_marks_the_unplaceable(
    mixed_fleet: Any, client_for: Any
) -> None:
    requests = [
        INTERACTIVE,
        {**INTERACTIVE, "prompt_tokens": 2_000_000},
        {**INTERACTIVE, "source": "us-batch"},
    ]
    response = client_for("service").post(
        "/api/v1/placements:batch", {"requests": requests}, format="json"
    )
    assert response.status_code == 200
    decisions = response.json()["decisions"]
    assert len(decisions) == 3
    assert decisions[0]["node"]
    assert decisions[1]["error"]["reasons"]["fra-h100-1"] == "no_kv_room"
    assert decisions[2]["node"]


def test_one_bad_request_rejects_the_whole_batch(mixed_fleet: Any, client_for: Any) -> None:
    requests = [INTERACTIVE, {**INTERACTIVE, "model": "nope"}]
    response = client_for("service").post(
        "/api/v1/placements:batch", {"requests": requests}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["errors"]["requests"]["1"]["model"] == ["Unknown model 'nope'."]


def test_decisions_and_outcomes_are_recorded_off_the_request_path(
    example_engine: Any, client_for: Any
) -> None:
    service = client_for("service")
    decision = service.post("/api/v1/placements", INTERACTIVE, format="json").json()
    assert not DecisionRecord.objects.exists()  # nothing written on the request thread
    outcome = service.post(
        f"/api/v1/placements/{decision['decision_id']}/outcome",
        {"ttft_ms": 300, "e2e_ms": 9000, "ok": True},
        format="json",
    )
    assert outcome.status_code == 200 and outcome.json()["slo_met"] is True
    example_engine.recorder.flush()
    record = DecisionRecord.objects.get(pk=decision["decision_id"])
    assert record.node == decision["node"] and record.ok is True and record.slo_met is True
    assert record.ttft_ms == 300


def test_a_refused_batch_leaves_no_decision_behind(example_engine: Any, client_for: Any) -> None:
    requests = [INTERACTIVE] * 3 + [{**INTERACTIVE, "source": "nowhere"}]
    response = client_for("service").post(
        "/api/v1/placements:batch", {"requests": requests}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["errors"]["requests"]["3"]["source"] == ["Unknown source 'nowhere'."]
    example_engine.recorder.flush()
    assert not DecisionRecord.objects.exists()


def test_a_decision_takes_one_outcome(example_engine: Any, client_for: Any) -> None:
    """A retried outcome must not feed the breaker and the SLO windows twice, whether the
    decision is still in memory or only in the database."""
    service = client_for("service")
    first, second = (
        service.post("/api/v1/placements", INTERACTIVE, format="json").json()["decision_id"]
        for _ in range(2)
    )

    def report(decision_id: str, ttft_ms: int) -> Any:
        return service.post(
            f"/api/v1/placements/{decision_id}/outcome",
            {"ttft_ms": ttft_ms, "ok": True},
            format="json",
        )

    assert report(first, 300).status_code == 200
    repeat = report(first, 999)
    assert repeat.status_code == 409 and "already has its outcome" in repeat.json()["message"]
    assert report(second, 400).status_code == 200
    example_engine.recorder.flush()
    assert DecisionRecord.objects.get(pk=first).ttft_ms == 300
    _forget_recent_decisions(example_engine)  # as after a restart: only the database knows
    assert report(second, 999).status_code == 409


def test_an_infinite_latency_is_refused(example_engine: Any, client_for: Any) -> None:
    service = client_for("service")
    decision = service.post("/api/v1/placements", INTERACTIVE, format="json").json()
    response = service.post(
        f"/api/v1/placements/{decision['decision_id']}/outcome",
        data='{"ok": true, "ttft_ms": 1e999}',
        content_type="application/json",
    )
    assert response.status_code == 400 and "ttft_ms" in response.json()["errors"]


def test_an_outcome_over_the_slo_is_a_miss(example_engine: Any, client_for: Any) -> None:
    service = client_for("service")
    decision = service.post("/api/v1/placements", INTERACTIVE, format="json").json()
    body = service.post(
        f"/api/v1/placements/{decision['decision_id']}/outcome",
        {"ttft_ms": 1200, "e2e_ms": 9000, "ok": True},
        format="json",
    ).json()
    assert body["slo_met"] is False


def test_an_outcome_for_an_unknown_decision_is_404(example_engine: Any, client_for: Any) -> None:
    response = client_for("service").post(
        "/api/v1/placements/deadbeef/outcome", {"ok": True}, format="json"
    )
    assert response.status_code == 404
    assert "deadbeef" in response.json()["message"]


def test_metrics_expose_latency_decisions_and_breakers(
    example_engine: Any, client_for: Any
) -> None:
    client_for("service").post("/api/v1/placements", INTERACTIVE, format="json")
    text = client_for(None).get("/metrics").content.decode()
    assert "locus_decision_latency_seconds_bucket" in text
    assert "locus_decision_cpu_seconds_bucket" in text
    assert "locus_decision_lock_wait_seconds_bucket" in text
    assert 'locus_decisions_total{node="' in text
    assert "locus_fallbacks_total" in text
    assert "locus_breaker_trips_total" in text


def test_a_decision_splits_its_wall_time_into_cpu_time_and_the_lock_wait(
    example_engine: Any,
) -> None:
    decision = example_engine.engine.decide(DecisionInput(**INTERACTIVE))
    assert decision.node is not None
    # Parts of the engine's wall time, so neither exceeds it (one thread's CPU time cannot
    # outrun the clock) beyond the gap between the two clocks' readings (they are read one
    # after the other, not at once: it failed once by that gap in CI's PostgreSQL pass); the
    # CPU time is never zero, a decision scores nodes.
    slack_us = 100.0
    assert 0 < decision.cpu_us <= decision.latency_us + slack_us
    assert 0 <= decision.lock_wait_us <= decision.latency_us + slack_us


def test_the_background_refresh_rebuilds_the_topology_only_after_an_inventory_write(
    example_engine: Any,
) -> None:
    first = example_engine.engine.snapshot.topology
    example_engine.refresh(reuse_topology=True)
    assert example_engine.engine.snapshot.topology is first
    node = Node.objects.get(name="muc-l4-1")
    node.usd_per_hour = 0.95
    node.save()
    example_engine.refresh(reuse_topology=True)
    topology = example_engine.engine.snapshot.topology
    assert topology is not first
    assert topology.node_by_name["muc-l4-1"].usd_per_hour == 0.95


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ok": "yes"}, "ok"),
        ({"ok": True, "ttft_ms": "300"}, "ttft_ms"),
        ({"ok": True, "ttft_ms": 900, "e2e_ms": 800}, "e2e_ms"),
    ],
)
def test_outcomes_are_checked_strictly(
    example_engine: Any, client_for: Any, body: dict[str, Any], field: str
) -> None:
    service = client_for("service")
    decision = service.post("/api/v1/placements", INTERACTIVE, format="json").json()
    response = service.post(
        f"/api/v1/placements/{decision['decision_id']}/outcome", body, format="json"
    )
    assert response.status_code == 400 and field in response.json()["errors"]


@pytest.mark.parametrize(("field", "value"), [("prompt_tokens", "1800"), ("explain", "yes")])
def test_placement_fields_are_not_coerced(
    example_engine: Any, client_for: Any, field: str, value: str
) -> None:
    response = client_for("service").post(
        "/api/v1/placements", {**INTERACTIVE, field: value}, format="json"
    )
    assert response.status_code == 400 and field in response.json()["errors"]


def test_only_the_identity_that_asked_may_report_the_outcome(
    example_engine: Any, client_for: Any
) -> None:
    """Another key could otherwise trip any node's breaker with decisions it never made; it
    learns nothing either (404, as for an unknown decision), in memory or after a restart."""
    owner, intruder = client_for("service"), client_for("service")
    decision_id = owner.post("/api/v1/placements", INTERACTIVE, format="json").json()["decision_id"]
    url = f"/api/v1/placements/{decision_id}/outcome"
    for _ in range(2):
        refused = intruder.post(url, {"ok": False}, format="json")
        assert refused.status_code == 404, refused.content
        assert refused.json()["message"] == f"No decision {decision_id!r}."
        example_engine.recorder.flush()
        _forget_recent_decisions(example_engine)  # the second round: only the database knows
    assert DecisionRecord.objects.get(pk=decision_id).ok is None
    assert owner.post(url, {"ok": True}, format="json").status_code == 200


def _forget_recent_decisions(serving: Any) -> None:
    """A fresh memory of recent decisions, as a restarted process has."""
    serving.outcomes = Outcomes(
        recorder=serving.recorder,
        breakers=serving.breakers,
        snapshot=lambda: serving.engine.snapshot,
    )
