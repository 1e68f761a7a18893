"""GET /api/v1/decisions: a paginated search over every stored decision record by id, time
range, node, model, SLO, policy and arm, with a 400 naming any bad parameter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from console.placement.models import DecisionRecord

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _record(i: int, **fields: Any) -> DecisionRecord:
    values: dict[str, Any] = {
        "id": f"d{i:04d}",
        "created_at": T0 + timedelta(seconds=i),
        "source_site": "muc-edge",
        "model": "llama-3.1-8b",
        "slo": "interactive",
        "prompt_tokens": 100,
        "max_output_tokens": 50,
        "node": "fra-h100-1",
        "node_site": "fra",
        "policy_name": "weighted-score",
        "policy_version": "builtin",
        "latency_us": 40.0,
    }
    return DecisionRecord(**(values | fields))


@pytest.fixture
def records() -> None:
    rows = [_record(i) for i in range(400)]  # beyond any page: the search reads every record
    rows += [
        _record(500, node="muc-l4-1", model="qwen2.5-7b", slo="batch"),
        _record(501, node="muc-l4-1", arm="canary", policy_name="ppo", policy_version="v2"),
        _record(502, node="muc-l4-1", arm="canary", policy_name="ppo", policy_version="v3"),
    ]
    DecisionRecord.objects.bulk_create(rows)


def _ids(client: Any, query: str) -> list[str]:
    response = client.get(f"/api/v1/decisions?{query}")
    assert response.status_code == 200, response.content
    return [r["id"] for r in response.json()["results"]]


def test_it_finds_a_decision_by_id_among_all_records(records: None, client_for: Any) -> None:
    assert _ids(client_for("viewer"), "id=d0007") == ["d0007"]
    assert _ids(client_for("viewer"), "id=nothing") == []


def test_it_searches_on_node_and_time_range(records: None, client_for: Any) -> None:
    since = (T0 + timedelta(seconds=10)).isoformat()
    until = (T0 + timedelta(seconds=13)).isoformat()
    query = f"node=fra-h100-1&from={since}&to={until}".replace("+", "%2B")
    # `from` inclusive, `to` exclusive, newest first.
    assert _ids(client_for("viewer"), query) == ["d0012", "d0011", "d0010"]
    assert _ids(client_for("viewer"), query + "&order=oldest") == ["d0010", "d0011", "d0012"]


def test_it_searches_on_model_slo_policy_and_arm(records: None, client_for: Any) -> None:
    viewer = client_for("viewer")
    assert _ids(viewer, "model=qwen2.5-7b") == ["d0500"]
    assert _ids(viewer, "slo=batch") == ["d0500"]
    assert _ids(viewer, "policy=ppo") == ["d0502", "d0501"]
    assert _ids(viewer, "policy=ppo@v2") == ["d0501"]
    assert _ids(viewer, "arm=canary&node=muc-l4-1") == ["d0502", "d0501"]


def test_it_pages_through_every_match(records: None, client_for: Any) -> None:
    viewer = client_for("viewer")
    first = viewer.get("/api/v1/decisions?node=fra-h100-1&limit=150").json()
    assert first["count"] == 400 and len(first["results"]) == 150
    seen = [r["id"] for r in first["results"]]
    for offset in (150, 300):
        page = viewer.get(f"/api/v1/decisions?node=fra-h100-1&limit=150&offset={offset}").json()
        seen += [r["id"] for r in page["results"]]
    assert seen == [f"d{i:04d}" for i in reversed(range(400))]


@pytest.mark.parametrize(
    ("query", "field", "says"),
    [
        ("nod=fra-h100-1", "nod", "Not a search field"),
        ("from=yesterday", "from", "Datetime has wrong format"),
        ("from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z", "from", "Must be before `to`"),
        ("arm=blue", "arm", "not a valid choice"),
        ("policy=a@b@c", "policy", "NAME@VERSION"),
        ("id=" + "x" * 40, "id", "no more than 32"),
        ("ok=perhaps", "ok", "Must be a valid boolean"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(
    client_for: Any, query: str, field: str, says: str
) -> None:
    response = client_for("viewer").get(f"/api/v1/decisions?{query}")
    assert response.status_code == 400, response.content
    assert says in " ".join(response.json()["errors"][field])


def test_it_is_for_signed_in_viewers(client_for: Any) -> None:
    assert client_for(None).get("/api/v1/decisions").status_code in (401, 403)
