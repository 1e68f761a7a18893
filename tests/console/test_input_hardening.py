"""Input the database or the parser would fail on is refused at the edge with a 400 naming the
field, on every DRF route (docs/hardening.md): NUL characters in paths, query strings and
bodies, absurd nesting, page sizes beyond any column, shares no sum can hold."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from console.api.pagination import MAX_LIMIT
from optimizer.topology import MAX_SHARE

pytestmark = pytest.mark.django_db
NUL = "a\x00b"


def _paths_with_parameters(client: Any) -> list[str]:
    schema = client.get("/api/schema/?format=json").json()
    return sorted(path for path in schema["paths"] if "{" in path)


def test_it_refuses_nul_in_every_path_parameter(fleet: Any, client_for: Any) -> None:
    admin = client_for("admin")
    paths = _paths_with_parameters(admin)
    assert "/api/v1/nodes/{name}" in paths and len(paths) > 20
    for path in paths:
        url = re.sub(r"\{[^}]+\}", "a%00b", path)
        for method in ("get", "post", "patch", "delete"):
            response = getattr(admin, method)(url, {}, format="json")
            assert response.status_code == 400, (method, url, response.status_code)
            assert response.json()["errors"] == {"path": [response.json()["errors"]["path"][0]]}


def test_it_refuses_nul_in_a_query_parameter(fleet: Any, client_for: Any) -> None:
    response = client_for("viewer").get("/api/v1/breaches?node=a%00b")
    assert response.status_code == 400
    assert "NUL" in response.json()["errors"]["node"][0]


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        (
            "/api/v1/sites",
            {"name": NUL, "tier": "edge", "region": "r", "jurisdiction": "EU"},
            "name",
        ),
        (
            "/api/v1/sites",
            {"name": "s1", "tier": "edge", "region": NUL, "jurisdiction": "EU"},
            "region",
        ),
        ("/api/v1/accelerators", {"name": NUL, "memory_gib": 24}, "name"),
    ],
)
def test_it_refuses_nul_in_a_body_field(
    fleet: Any, client_for: Any, url: str, body: dict[str, Any], field: str
) -> None:
    response = client_for("operator").post(url, body, format="json")
    assert response.status_code == 400, response.content
    assert "NUL" in response.json()["errors"][field][0]
    response = client_for("operator").post(url, body)  # a form body is held to the same
    assert response.status_code == 400 and "NUL" in response.json()["errors"][field][0]


def test_it_refuses_nul_in_a_decision_through_django(fleet: Any, client_for: Any) -> None:
    decision = {
        "model": "llama-3.1-8b",
        "source": "munich-app",
        "prompt_tokens": 10,
        "max_output_tokens": 10,
    }
    operator = client_for("operator")
    response = operator.post("/api/v1/placements", {**decision, "session_id": NUL}, format="json")
    assert response.status_code == 400
    assert "NUL" in response.json()["errors"]["session_id"][0]
    batch = {"requests": [decision, {**decision, "session_id": NUL}]}
    response = operator.post("/api/v1/placements:batch", batch, format="json")
    assert response.status_code == 400
    assert "NUL" in response.json()["errors"]["requests"]["1"]["session_id"][0]


def test_it_answers_absurdly_deep_json_with_400(fleet: Any, client_for: Any) -> None:
    response = client_for("operator").generic(
        "POST", "/api/v1/sites", "[" * 100_000, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["message"] == "JSON parse error - nested too deeply"


def test_page_sizes_are_bounded(fleet: Any, client_for: Any) -> None:
    viewer = client_for("viewer")
    response = viewer.get("/api/v1/nodes?limit=9223372036854775808")
    assert response.status_code == 200 and len(response.json()["results"]) == 2
    response = viewer.get("/api/v1/nodes?limit=5000&offset=9223372036854775808")
    assert response.status_code == 200 and response.json()["results"] == []
    assert response.json()["count"] == 2
    assert MAX_LIMIT == 1000


@pytest.mark.parametrize("share", [1.7e308, MAX_SHARE * 2, 0])
def test_shares_are_finite_and_bounded(fleet: Any, client_for: Any, share: float) -> None:
    operator = client_for("operator")
    (workload,) = operator.get("/api/v1/workload").json()["results"]
    response = operator.patch(f"/api/v1/workload/{workload['id']}", {"share": share}, format="json")
    assert response.status_code == 400 and response.json()["errors"]["share"]
    (source, *_) = operator.get("/api/v1/sources").json()["results"]
    response = operator.patch(f"/api/v1/sources/{source['name']}", {"share": share}, format="json")
    assert response.status_code == 400 and response.json()["errors"]["share"]


def test_a_topology_file_with_an_unbounded_share_imports_nothing(
    fleet: Any, client_for: Any
) -> None:
    operator = client_for("operator")
    topology = operator.get("/api/v1/topology").json()
    topology["workload"]["models"][0]["share"] = 1.7e308
    response = operator.put("/api/v1/topology", topology, format="json")
    assert response.status_code == 400
    assert any(
        "workload" in line and "share" in line for line in response.json()["errors"]["topology"]
    )
    topology["workload"]["models"][0]["share"] = 1.0
    topology["sites"][0]["region"] = NUL
    response = operator.generic(
        "PUT", "/api/v1/topology", json.dumps(topology), content_type="application/json"
    )
    assert response.status_code == 400 and "NUL" in json.dumps(response.json())


@pytest.mark.parametrize("body", [[None, None], 5, "text"])
def test_a_topology_that_is_not_an_object_is_400(fleet: Any, client_for: Any, body: Any) -> None:
    """Found by the schema fuzzer (tests/console/test_fuzz_schema.py): a JSON list was a 500."""
    response = client_for("operator").put("/api/v1/topology", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["topology"]


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/v1/accelerators/l4", {"memory_gib": 1.7e308}),
        ("/api/v1/models/llama-3.1-8b", {"memory_gib": 1.28e308}),
        ("/api/v1/nodes/muc-l4-1", {"gpus": 10**12}),
    ],
)
def test_memory_and_gpus_are_bounded(
    fleet: Any, client_for: Any, url: str, body: dict[str, Any]
) -> None:
    """Found by the schema fuzzer: 1.7e308 GiB made a node's KV capacity infinite and the
    inventory check a 500."""
    response = client_for("operator").patch(url, body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()["errors"]) == set(body)
