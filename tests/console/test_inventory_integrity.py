"""Inventory writes keep the inventory a valid topology: every create, update and delete over
the API is validated as a whole topology and rolled back if it would break it (409 with
`referenced_by` for a delete of something in use, 400 with the problems otherwise); names
follow one rule; a second workload share for a model is a field error."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from console.inventory.models import (
    Accelerator,
    Node,
    Profile,
    ServedModel,
    Site,
    WorkloadShare,
)
from console.inventory.selectors import inventory_topology
from tests.conftest import CONTRACT_EXAMPLE, TOPOLOGIES

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db: Any) -> Any:
    """The demo fleet: two models, nodes serving one or both, a workload share for each."""
    from console.inventory.services import topology_import
    from optimizer.topology_files import load_topology

    topology = load_topology(TOPOLOGIES / "fleet-demo.yaml")
    topology_import(topology=topology)
    return topology


def _snapshot() -> dict[str, Any]:
    """The whole inventory, for checking that a refused write changed nothing."""
    return inventory_topology().to_dict()


def _refused_delete(client: Any, path: str) -> dict[str, Any]:
    before = _snapshot()
    response = client.delete(path)
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["message"] == "Still in use; remove what refers to it first."
    assert _snapshot() == before
    return body


def test_a_model_that_nodes_serve_cannot_be_deleted(demo: Any, client_for: Any) -> None:
    serving = sorted(n.name for n in demo.nodes if "qwen2.5-7b" in n.models)
    body = _refused_delete(client_for("operator"), "/api/v1/models/qwen2.5-7b")
    # Nodes that serve it alone and nodes that serve it next to another model alike (the
    # error lists the first ten users).
    assert body["errors"]["referenced_by"] == serving[:10]
    assert Profile.objects.filter(model__name="qwen2.5-7b").count() == 5
    assert WorkloadShare.objects.filter(model__name="qwen2.5-7b").exists()


def test_a_model_in_the_workload_cannot_be_deleted(fleet: Any, client_for: Any) -> None:
    body = _refused_delete(client_for("operator"), "/api/v1/models/llama-3.1-8b")
    assert body["errors"]["referenced_by"] == ["fra-h100-1", "muc-l4-1", "workload"]


def test_a_profile_that_nodes_need_cannot_be_deleted(demo: Any, client_for: Any) -> None:
    profile = Profile.objects.get(model__name="qwen2.5-7b", accelerator__name="l4")
    users = sorted(n.name for n in demo.nodes if n.accelerator == "l4" and "qwen2.5-7b" in n.models)
    assert users
    body = _refused_delete(client_for("operator"), f"/api/v1/profiles/{profile.pk}")
    assert body["errors"]["referenced_by"] == users


def test_an_unused_model_and_profile_can_still_be_deleted(fleet: Any, client_for: Any) -> None:
    operator = client_for("operator")
    assert (
        operator.post(
            "/api/v1/models", {"name": "spare", "memory_gib": 1, "kv_bytes_per_token": 8}
        ).status_code
        == 201
    )
    created = operator.post(
        "/api/v1/profiles",
        {
            "model": "spare",
            "accelerator": "l4",
            "prefill_tokens_per_s": 10,
            "decode_step_ms": 10,
            "decode_step_ms_per_seq": 0,
            "max_batch": 1,
        },
    )
    assert created.status_code == 201, created.content
    assert operator.delete(f"/api/v1/profiles/{created.json()['id']}").status_code == 204
    assert operator.delete("/api/v1/models/spare").status_code == 204
    assert not ServedModel.objects.filter(name="spare").exists()


@pytest.mark.parametrize(
    ("path", "change", "problem"),
    [
        ("/api/v1/accelerators/l4", {"memory_gib": 1}, "nodes (muc-l4-1): field 'models'"),
        ("/api/v1/models/llama-3.1-8b", {"memory_gib": 1000}, "need 1000 GiB"),
    ],
)
def test_a_change_that_makes_models_no_longer_fit_is_refused(
    fleet: Any, client_for: Any, path: str, change: dict[str, Any], problem: str
) -> None:
    before = _snapshot()
    response = client_for("operator").patch(path, change, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert "invalid topology" in body["message"]
    assert any(problem in p for p in body["errors"]["topology"]), body
    assert _snapshot() == before
    assert Accelerator.objects.get(name="l4").memory_gib == 24


def test_deleting_the_last_node_is_refused_with_the_problem(fleet: Any, client_for: Any) -> None:
    operator = client_for("operator")
    assert operator.delete("/api/v1/nodes/muc-l4-1").status_code == 204
    before = _snapshot()
    response = operator.delete("/api/v1/nodes/fra-h100-1")
    assert response.status_code == 400
    assert any(p.startswith("nodes:") for p in response.json()["errors"]["topology"])
    assert _snapshot() == before


def test_after_refused_writes_the_topology_and_the_engine_still_work(
    fleet: Any, client_for: Any
) -> None:
    from console.placement.selectors import engine_snapshot
    from optimizer.decide.state.snapshot import PolicyRef

    operator = client_for("operator")
    operator.delete("/api/v1/models/llama-3.1-8b")
    operator.patch("/api/v1/accelerators/l4", {"memory_gib": 1}, format="json")
    response = client_for("viewer").get("/api/v1/topology")
    assert response.status_code == 200
    assert {n["name"] for n in response.json()["nodes"]} == {"muc-l4-1", "fra-h100-1"}
    builtin = PolicyRef(name="weighted-score", version="builtin", spec="weighted-score")
    snapshot = engine_snapshot(default_policy=builtin, previous=None, breaker_open_s=60.0)
    assert {n.name for n in snapshot.topology.nodes} == {"muc-l4-1", "fra-h100-1"}


def test_an_inventory_can_still_be_built_entry_by_entry(client_for: Any) -> None:
    """An empty inventory is not a valid topology either; writes that add no problem are let
    through, so a fleet can be entered one entry at a time."""
    operator = client_for("operator")
    steps = [
        ("sites", {"name": "s1", "tier": "edge", "region": "r", "jurisdiction": "EU"}),
        ("accelerators", {"name": "g1", "memory_gib": 24}),
        ("models", {"name": "m1", "memory_gib": 8, "kv_bytes_per_token": 1024}),
        (
            "profiles",
            {
                "model": "m1",
                "accelerator": "g1",
                "prefill_tokens_per_s": 100,
                "decode_step_ms": 10,
                "decode_step_ms_per_seq": 0.1,
                "max_batch": 8,
            },
        ),
        (
            "nodes",
            {"name": "n1", "site": "s1", "accelerator": "g1", "usd_per_hour": 1, "models": ["m1"]},
        ),
    ]
    for resource, body in steps:
        response = operator.post(f"/api/v1/{resource}", body, format="json")
        assert response.status_code == 201, (resource, response.content)
    assert [n.name for n in inventory_topology().nodes] == ["n1"]
    # From now on it is valid, and stays so.
    assert operator.patch("/api/v1/accelerators/g1", {"memory_gib": 8}).status_code == 400


def test_an_invalid_inventory_is_a_clear_error_not_a_crash(fleet: Any, client_for: Any) -> None:
    # Only a write that bypasses the API (and its checks) can do this.
    Accelerator.objects.filter(name="l4").update(memory_gib=1)
    response = client_for("viewer").get("/api/v1/topology")
    assert response.status_code == 409
    body = response.json()
    assert "not a valid topology" in body["message"]
    assert any("nodes (muc-l4-1)" in p for p in body["errors"]["topology"])
    with pytest.raises(CommandError, match=r"nodes \(muc-l4-1\): field 'models'"):
        call_command("dump_topology", stdout=io.StringIO())


# -- workload shares ---------------------------------------------------------------------------


def test_a_second_share_for_a_model_is_a_field_error(demo: Any, client_for: Any) -> None:
    operator = client_for("operator")
    before = list(WorkloadShare.objects.values_list("model__name", "share"))
    created = operator.post(
        "/api/v1/workload", {"model": "llama-3.1-8b", "share": 0.5}, format="json"
    )
    assert created.status_code == 400, created.content
    assert created.json()["errors"]["model"] == ["This model already has a share."]
    llama = WorkloadShare.objects.get(model__name="llama-3.1-8b")
    moved = operator.patch(f"/api/v1/workload/{llama.pk}", {"model": "qwen2.5-7b"}, format="json")
    assert moved.status_code == 400, moved.content
    assert "model" in moved.json()["errors"]
    # Its own model again is no clash.
    same = operator.patch(f"/api/v1/workload/{llama.pk}", {"model": "llama-3.1-8b"}, format="json")
    assert same.status_code == 200
    assert list(WorkloadShare.objects.values_list("model__name", "share")) == before


# -- names -------------------------------------------------------------------------------------

BAD_NAMES = ["a/b", "a b", "", " ", "tab\there", ".", "..", "x" * 101]


def _bodies() -> dict[str, dict[str, Any]]:
    return {
        "sites": {"tier": "edge", "region": "r", "jurisdiction": "EU"},
        "accelerators": {"memory_gib": 24},
        "models": {"memory_gib": 1, "kv_bytes_per_token": 8},
        "slos": {"ttft_p95_ms": 100, "e2e_p95_ms": 1000},
        "sources": {"site": "muc-edge", "share": 0.1, "slo": "batch"},
        "nodes": {
            "site": "muc-edge",
            "accelerator": "l4",
            "usd_per_hour": 1,
            "models": ["llama-3.1-8b"],
        },
    }


@pytest.mark.parametrize("resource", list(_bodies()))
def test_every_named_resource_refuses_a_bad_name(
    fleet: Any, client_for: Any, resource: str
) -> None:
    operator = client_for("operator")
    before = _snapshot()
    for name in BAD_NAMES:
        response = operator.post(
            f"/api/v1/{resource}", {"name": name, **_bodies()[resource]}, format="json"
        )
        assert response.status_code == 400, (name, response.content)
        assert response.json()["errors"]["name"], name
    assert _snapshot() == before
    good = operator.post(
        f"/api/v1/{resource}", {"name": "ok_name-1.2:x", **_bodies()[resource]}, format="json"
    )
    assert good.status_code == 201, good.content
    assert client_for("viewer").get(f"/api/v1/{resource}/ok_name-1.2:x").status_code == 200


def test_a_rename_to_a_bad_name_is_refused(fleet: Any, client_for: Any) -> None:
    response = client_for("operator").patch(
        "/api/v1/sites/muc-edge", {"name": "muc/edge"}, format="json"
    )
    assert response.status_code == 400
    assert "/" in response.json()["errors"]["name"][0]
    assert Site.objects.filter(name="muc-edge").exists()


def test_topology_imports_apply_the_name_rule(fleet: Any, client_for: Any, tmp_path: Path) -> None:
    before = _snapshot()
    text = CONTRACT_EXAMPLE.read_text().replace("muc-l4-1", "muc/l4-1")
    response = client_for("operator").put("/api/v1/topology", text, content_type="application/yaml")
    assert response.status_code == 400
    assert any(
        "nodes[0] (muc/l4-1): field 'name'" in p for p in response.json()["errors"]["topology"]
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(CommandError, match=r"bad.yaml: nodes\[0\] \(muc/l4-1\): field 'name'"):
        call_command("load_topology", str(bad), stdout=io.StringIO())
    assert _snapshot() == before


def test_an_import_that_breaks_entries_it_keeps_is_refused(
    fleet: Any, client_for: Any, tmp_path: Path
) -> None:
    """Without --prune, entries missing from the file are kept: the file alone may be valid
    while the inventory it leaves is not."""
    operator = client_for("operator")
    operator.post("/api/v1/models", {"name": "small", "memory_gib": 4, "kv_bytes_per_token": 8})
    operator.post(
        "/api/v1/profiles",
        {
            "model": "small",
            "accelerator": "l4",
            "prefill_tokens_per_s": 10,
            "decode_step_ms": 10,
            "decode_step_ms_per_seq": 0,
            "max_batch": 1,
        },
    )
    created = operator.post(
        "/api/v1/nodes",
        {
            "name": "muc-l4-2",
            "site": "muc-edge",
            "accelerator": "l4",
            "usd_per_hour": 1,
            "models": ["llama-3.1-8b", "small"],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    before = _snapshot()
    edited = tmp_path / "fleet.yaml"
    edited.write_text(
        CONTRACT_EXAMPLE.read_text().replace(
            "{name: llama-3.1-8b, memory_gib: 16", "{name: llama-3.1-8b, memory_gib: 20"
        )
    )
    with pytest.raises(CommandError, match=r"invalid after the import: nodes \(muc-l4-2\)"):
        call_command("load_topology", str(edited), stdout=io.StringIO())
    assert _snapshot() == before
    assert Node.objects.get(name="muc-l4-2").served_models.count() == 2


@pytest.mark.parametrize("path", sorted(TOPOLOGIES.rglob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_topologies_follow_the_name_rule(path: Path) -> None:
    from console.inventory.services import topology_name_problems
    from optimizer.topology_files import load_topology

    assert topology_name_problems(load_topology(path), str(path)) == []
