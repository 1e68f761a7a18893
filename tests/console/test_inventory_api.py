"""The inventory REST API: filtering, ordering, pagination, writes, node actions, errors."""

from __future__ import annotations

from typing import Any

import pytest

from console.inventory.models import Link, Node

pytestmark = pytest.mark.django_db


def test_it_filters_nodes_by_tier_and_state(fleet: Any, client_for: Any) -> None:
    viewer = client_for("viewer")
    body = viewer.get("/api/v1/nodes?tier=edge").json()
    assert [n["name"] for n in body["results"]] == ["muc-l4-1"]
    assert body["results"][0]["kv_capacity_gib"] == 8.0
    Node.objects.filter(name="fra-h100-1").update(state="draining")
    body = viewer.get("/api/v1/nodes?state=draining").json()
    assert [n["name"] for n in body["results"]] == ["fra-h100-1"]


def test_it_orders_and_paginates(fleet: Any, client_for: Any) -> None:
    viewer = client_for("viewer")
    body = viewer.get("/api/v1/nodes?ordering=-usd_per_hour&limit=1").json()
    assert body["count"] == 2
    assert [n["name"] for n in body["results"]] == ["fra-h100-1"]
    assert "offset=1" in body["next"]


def test_an_operator_creates_a_node_by_names(fleet: Any, client_for: Any) -> None:
    response = client_for("operator").post(
        "/api/v1/nodes",
        {
            "name": "muc-l4-2",
            "site": "muc-edge",
            "accelerator": "l4",
            "gpus": 2,
            "usd_per_hour": 1.6,
            "models": ["llama-3.1-8b"],
            "exporter_urls": ["http://127.0.0.1:9100/metrics"],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    node = Node.objects.get(name="muc-l4-2")
    assert node.site.name == "muc-edge" and node.gpus == 2 and node.state == "active"


def test_invalid_input_gets_field_errors(fleet: Any, client_for: Any) -> None:
    response = client_for("operator").post(
        "/api/v1/nodes",
        {
            "name": "fra-h100-1",
            "site": "nowhere",
            "accelerator": "l4",
            "gpus": 0,
            "usd_per_hour": -1,
            "models": ["llama-3.1-8b"],
        },
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["message"]
    assert set(body["errors"]) >= {"name", "site", "gpus", "usd_per_hour"}


def test_a_node_whose_models_do_not_fit_is_refused(fleet: Any, client_for: Any) -> None:
    client_for("operator").post(
        "/api/v1/models",
        {"name": "big", "memory_gib": 30, "kv_bytes_per_token": 1000},
        format="json",
    )
    client_for("operator").post(
        "/api/v1/profiles",
        {
            "model": "big",
            "accelerator": "l4",
            "prefill_tokens_per_s": 100,
            "decode_step_ms": 50,
            "decode_step_ms_per_seq": 1,
            "max_batch": 4,
        },
        format="json",
    )
    response = client_for("operator").patch(
        "/api/v1/nodes/muc-l4-1", {"models": ["llama-3.1-8b", "big"]}, format="json"
    )
    assert response.status_code == 400
    assert "46 GiB" in response.json()["errors"]["models"][0]


def test_a_link_cannot_join_a_site_to_itself_or_repeat_a_pair(fleet: Any, client_for: Any) -> None:
    operator = client_for("operator")
    same = operator.post(
        "/api/v1/links",
        {"a": "muc-edge", "b": "muc-edge", "rtt_ms": 1, "bandwidth_gbps": 1},
        format="json",
    )
    assert same.status_code == 400 and "itself" in same.json()["errors"]["b"][0]
    again = operator.post(
        "/api/v1/links",
        {"a": "use-cloud", "b": "fra-core", "rtt_ms": 1, "bandwidth_gbps": 1},
        format="json",
    )
    assert again.status_code == 400 and "already linked" in again.json()["errors"]["b"][0]
    negative = operator.post(
        "/api/v1/links",
        {"a": "use-cloud", "b": "fra-core", "rtt_ms": -1, "bandwidth_gbps": 1},
        format="json",
    )
    assert "rtt_ms" in negative.json()["errors"]
    assert Link.objects.count() == 3


def test_the_database_refuses_a_self_link_even_without_the_api(fleet: Any) -> None:
    from django.db import IntegrityError, transaction

    from console.inventory.models import Site

    site = Site.objects.get(name="muc-edge")
    with pytest.raises(IntegrityError), transaction.atomic():
        Link.objects.create(site_a=site, site_b=site, rtt_ms=1, bandwidth_gbps=1)


def test_drain_then_uncordon_a_node(fleet: Any, client_for: Any) -> None:
    operator = client_for("operator")
    response = operator.post(
        "/api/v1/nodes/muc-l4-1/drain", {"reason": "kernel upgrade"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["state"] == "draining"
    assert Node.objects.get(name="muc-l4-1").state_reason == "kernel upgrade"
    again = operator.post("/api/v1/nodes/muc-l4-1/cordon", {"reason": "x"}, format="json")
    assert again.status_code == 409 and "it is draining" in again.json()["message"]
    assert (
        operator.post("/api/v1/nodes/muc-l4-1/uncordon", {}, format="json").json()["state"]
        == "active"
    )


@pytest.mark.parametrize("action", ["drain", "cordon"])
@pytest.mark.parametrize("reason", [None, "", "   "])
def test_it_refuses_to_take_a_node_out_without_a_reason(
    fleet: Any, client_for: Any, action: str, reason: str | None
) -> None:
    body = {} if reason is None else {"reason": reason}
    response = client_for("operator").post(f"/api/v1/nodes/muc-l4-1/{action}", body, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()["errors"]
    node = Node.objects.get(name="muc-l4-1")
    assert node.state == "active" and not node.state_changes.exists()


def test_a_state_change_records_who_did_it_when_and_why(fleet: Any, client_for: Any) -> None:
    operator = client_for("operator")
    drained = operator.post(
        "/api/v1/nodes/muc-l4-1/drain", {"reason": "  GPU ECC errors  "}, format="json"
    ).json()
    assert drained["state_reason"] == "GPU ECC errors"
    who = drained["state_changed_by"]
    assert who.startswith("operator-") and drained["state_changed_at"]
    operator.post("/api/v1/nodes/muc-l4-1/uncordon", {}, format="json")
    history = client_for("viewer").get("/api/v1/nodes/muc-l4-1/state-changes").json()
    assert [(h["action"], h["from_state"], h["to_state"], h["actor"]) for h in history] == [
        ("uncordon", "draining", "active", who),
        ("drain", "active", "draining", who),
    ]
    assert history[1]["reason"] == "GPU ECC errors"
    refused = client_for("viewer").post(
        "/api/v1/nodes/muc-l4-1/drain", {"reason": "curious"}, format="json"
    )
    assert refused.status_code == 403


def test_a_node_in_use_cannot_lose_its_site(fleet: Any, client_for: Any) -> None:
    response = client_for("operator").delete("/api/v1/sites/fra-core")
    assert response.status_code == 409
    assert "fra-h100-1" in response.json()["errors"]["referenced_by"]


def test_topology_import_over_the_api_reports_and_refuses_bad_files(
    fleet: Any, client_for: Any
) -> None:
    from tests.conftest import CONTRACT_EXAMPLE

    operator = client_for("operator")
    text = CONTRACT_EXAMPLE.read_text()
    same = operator.put("/api/v1/topology", text, content_type="application/yaml")
    assert same.status_code == 200 and same.json()["changed"] is False
    bad = operator.put(
        "/api/v1/topology",
        text.replace("site: fra-core, accelerator", "site: mars, accelerator"),
        content_type="application/yaml",
    )
    assert bad.status_code == 400
    assert "unknown site 'mars'" in bad.json()["errors"]["topology"][0]
    exported = client_for("viewer").get("/api/v1/topology").json()
    assert {n["name"] for n in exported["nodes"]} == {"muc-l4-1", "fra-h100-1"}


def test_unknown_routes_and_objects_use_the_error_shape(fleet: Any, client_for: Any) -> None:
    response = client_for("viewer").get("/api/v1/nodes/nope")
    assert response.status_code == 404
    assert set(response.json()) == {"message"}
    assert response.json()["message"]


def test_an_operator_sets_a_node_address_and_it_is_dumped(fleet: Any, client_for: Any) -> None:
    operator = client_for("operator")
    response = operator.patch(
        "/api/v1/nodes/muc-l4-1", {"address": "[fd00::0:7]:8000"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["address"] == "[fd00::7]:8000"
    dumped = operator.get("/api/v1/topology").json()
    node = next(n for n in dumped["nodes"] if n["name"] == "muc-l4-1")
    assert node["address"] == "[fd00::7]:8000"
    assert "address" not in next(n for n in dumped["nodes"] if n["name"] == "fra-h100-1")


@pytest.mark.parametrize("bad", ["pod-a:8000", "10.0.0.1:99999", "10.0.0.1"])
def test_it_rejects_a_node_address_that_is_not_ip_and_port(
    bad: str, fleet: Any, client_for: Any
) -> None:
    response = client_for("operator").patch(
        "/api/v1/nodes/muc-l4-1", {"address": bad}, format="json"
    )
    assert response.status_code == 400
    assert "address" in response.json()["errors"]
    assert Node.objects.get(name="muc-l4-1").address == ""


def test_it_refuses_a_second_node_at_the_same_address(fleet: Any, client_for: Any) -> None:
    operator = client_for("operator")
    first = operator.patch("/api/v1/nodes/muc-l4-1", {"address": "10.0.0.1:8000"}, format="json")
    assert first.status_code == 200
    second = operator.patch("/api/v1/nodes/fra-h100-1", {"address": "10.0.0.1:8000"}, format="json")
    assert second.status_code == 400, second.content
    assert "duplicate address" in str(second.json())
    assert Node.objects.get(name="fra-h100-1").address == ""
