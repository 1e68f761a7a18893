"""Split decisions (issue #30) through the REST door: a long prompt gets a prefill node and a
decode node, the hard constraints hold for both, the fallbacks are pairs, the record, receipt
and outcome carry the prefill node; an unsplit answer is as it always was. And parity: the
simulator's pipeline on the same state answers the same pairs with the same explanation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from console.inventory.models import Node
from console.placement.engine.runtime import runtime
from console.placement.models import DecisionRecord
from optimizer.decide.registry import get_policy, get_splitter
from optimizer.decide.request import placement_request
from optimizer.sim import Simulator
from tests.console.placement.pd_fleet import LONG, SPLIT_BODY, install

pytestmark = pytest.mark.django_db
UNSPLIT_KEYS = {"decision_id", "node", "site", "fallbacks", "policy", "arm"}


def _place(client_for: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = client_for("service").post("/api/v1/placements", body, format="json")
    assert response.status_code == 200, response.content
    answer: dict[str, Any] = response.json()
    return answer


def test_a_long_prompt_is_split_and_its_record_and_receipt_say_why(
    engine_settings: Any, client_for: Any
) -> None:
    topology, rt = install()
    answer = _place(client_for, SPLIT_BODY)
    assert (answer["node"], answer["prefill_node"]) == ("core-d", "core-p")
    assert answer["site"] == answer["prefill_site"] == "b-core"
    assert answer["prefill_address"] == topology.node_by_name["core-p"].address
    # Fallbacks are pairs, aligned; a US prefill node never serves an EU-only prompt.
    assert len(answer["prefill_fallbacks"]) == len(answer["fallbacks"])
    assert "cloud-p" not in answer["prefill_fallbacks"]
    rt.recorder.flush()
    record = DecisionRecord.objects.get(pk=answer["decision_id"])
    assert (record.node, record.prefill_node) == ("core-d", "core-p")
    split = record.receipt["split"]
    assert split["prefill_node"] == "core-p" and split["kv_bytes"] == LONG * 1000
    assert split["transfer_ms"] > 0
    assert split["estimated_ttft_split_ms"] < split["estimated_ttft_mixed_ms"]
    shown = client_for("viewer").get(f"/api/v1/decisions/{answer['decision_id']}").json()
    assert shown["prefill_node"] == "core-p" and shown["receipt"]["split"] == split


def test_residency_holds_for_the_prefill_node_too(engine_settings: Any, client_for: Any) -> None:
    _, rt = install()
    Node.objects.filter(name="core-p").update(state="draining")
    rt.refresh()
    answer = _place(client_for, SPLIT_BODY)
    # The EU's prefill node is draining; the US one may not see an EU-only prompt.
    prefills = {answer.get("prefill_node"), *answer.get("prefill_fallbacks", [])}
    assert not prefills & {"cloud-p", "core-p"}


def test_an_unsplit_answer_has_no_prefill_keys(engine_settings: Any, client_for: Any) -> None:
    install()
    answer = _place(client_for, {**SPLIT_BODY, "prompt_tokens": 500})
    assert set(answer) == UNSPLIT_KEYS
    assert answer["node"] == "edge-m"  # the only mixed node


def test_a_batch_answers_split_and_unsplit_requests_in_order(
    engine_settings: Any, client_for: Any
) -> None:
    install()
    requests = [SPLIT_BODY, {**SPLIT_BODY, "prompt_tokens": 500}]
    response = client_for("service").post(
        "/api/v1/placements:batch", {"requests": requests}, format="json"
    )
    first, second = response.json()["decisions"]
    assert first["prefill_node"] == "core-p" and first["node"] == "core-d"
    assert set(second) == UNSPLIT_KEYS


def test_the_outcome_names_the_prefill_node_and_feeds_its_breaker(
    engine_settings: Any, client_for: Any
) -> None:
    install()
    service = client_for("service")
    for _ in range(3):  # engine_settings: 3 consecutive failures open a breaker
        answer = service.post("/api/v1/placements", SPLIT_BODY, format="json").json()
        assert answer["prefill_node"] == "core-p"
        result = service.post(
            f"/api/v1/placements/{answer['decision_id']}/outcome",
            {"ok": True, "ttft_ms": 900.0, "e2e_ms": 2000.0, "prefill_ok": False},
            format="json",
        )
        assert result.status_code == 200, result.content
        assert result.json()["node"] == answer["node"]
        assert result.json()["prefill_node"] == "core-p"
    board = runtime().breakers
    assert board.state(answer["node"]) == "closed" and board.state("core-p") == "open"


def test_http_and_simulator_answer_the_same_pairs(engine_settings: Any, client_for: Any) -> None:
    topology, _ = install()
    answer = _place(client_for, SPLIT_BODY)
    runtime().recorder.flush()
    receipt = DecisionRecord.objects.get(pk=answer["decision_id"]).receipt
    policy = get_policy("weighted-score", topology)
    sim = Simulator(topology, policy, [], [], splitter=get_splitter("pd-threshold"))
    request = placement_request(
        topology,
        model="m1",
        source_site="a-edge",
        slo="eu-only",
        prompt_tokens=LONG,
        max_output_tokens=50,
        source="app",
    )
    choice = sim.pipeline.decide(sim.fleet, request, sim.dynamic, sim.prefix, policy, 4)
    names = sim.fleet.names
    pairs = [
        (names[p.decode], names[p.prefill] if p.prefill is not None else None) for p in choice.pairs
    ]
    http = list(
        zip(
            [answer["node"], *answer["fallbacks"]],
            [answer["prefill_node"], *answer["prefill_fallbacks"]],
            strict=True,
        )
    )
    assert http == pairs
    split = choice.pairs[0].split
    assert split is not None
    explained = {k: v for k, v in receipt["split"].items() if not k.startswith("prefill_")}
    assert explained == split.explain()
    assert np.isfinite(explained["transfer_ms"])


def test_a_decode_half_does_not_make_its_mixed_node_look_full_for_prefill(
    engine_settings: Any, client_for: Any
) -> None:
    """Issue #30: a split's decode half counts among its node's running sequences in the
    engine's live state, not as a queued prompt; so the next long prompt's one-node estimate
    on that (mixed) node is not a whole prefill (5 s on edge-m) longer."""
    _, rt = install()
    Node.objects.filter(name__in=["core-d", "edge-d"]).update(state="draining")
    rt.refresh()
    body = {**SPLIT_BODY, "explain": True}
    first = _place(client_for, body)
    assert (first["node"], first["prefill_node"]) == ("edge-m", "core-p")
    second = _place(client_for, body)

    def edge_m(answer: dict[str, Any]) -> dict[str, Any]:  # its explained candidate row
        rows: list[dict[str, Any]] = answer["candidates"]
        return next(row for row in rows if row["node"] == "edge-m")

    before, after = edge_m(first), edge_m(second)
    assert (after["queue_depth"], after["running"]) == (0, 1)
    # A busy node's half decode step (11 ms on edge-m), not 5,000 ms of prefill ahead.
    assert 0 < after["estimated_ttft_ms"] - before["estimated_ttft_ms"] < 50
