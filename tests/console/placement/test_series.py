"""GET /api/v1/series/fleet: fleet-wide chart series bucketed in the database, over bounded,
validated ranges, with rollout moves as marks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from console.placement.models import BreakerEvent, DecisionRecord

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _record(i: int, at: datetime, **extra: Any) -> DecisionRecord:
    values: dict[str, Any] = {
        "id": f"{i:032x}",
        "created_at": at,
        "source_site": "muc-edge",
        "model": "llama-3.1-8b",
        "slo": "interactive",
        "prompt_tokens": 10,
        "max_output_tokens": 10,
        "node": "muc-l4-1",
        "node_site": "muc-edge",
        "policy_name": "weighted-score",
        "policy_version": "builtin",
        "latency_us": 100.0,
        **extra,
    }
    return DecisionRecord.objects.create(**values)


def _get(client_for: Any, **params: str) -> Any:
    return client_for("viewer").get("/api/v1/series/fleet", params)


def test_it_counts_and_averages_per_bucket_with_gaps_for_no_data(
    fleet: Any, client_for: Any
) -> None:
    # Bucket 0 (12:00): 3 decisions, one degraded, outcomes 2 met of 3 (interactive).
    _record(1, T0 + timedelta(seconds=1), latency_us=100.0, slo_met=True)
    _record(2, T0 + timedelta(seconds=30), latency_us=300.0, slo_met=True, degraded="scorer_slow")
    _record(3, T0 + timedelta(seconds=59), latency_us=200.0, slo_met=False)
    # Bucket 2 (12:02): one decision, no outcome yet. Bucket 1 has nothing.
    _record(4, T0 + timedelta(seconds=120), latency_us=50.0)
    BreakerEvent.objects.create(
        node="muc-l4-1", from_state="closed", to_state="open", reason="x", at=T0 + timedelta(1 / 24)
    )
    BreakerEvent.objects.create(
        node="muc-l4-1", from_state="closed", to_state="open", reason="5 failures", at=T0
    )
    response = _get(
        client_for,
        **{"from": T0.isoformat(), "to": (T0 + timedelta(minutes=3)).isoformat()},
        step="60",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    t0 = int(T0.timestamp())
    assert body["t"] == [t0, t0 + 60, t0 + 120]
    assert body["decisions_per_s"] == [3 / 60, 0, 1 / 60]
    assert body["latency_us_mean"] == [pytest.approx(200.0), None, pytest.approx(50.0)]
    assert body["latency_us_max"] == [300.0, None, 50.0]
    assert body["fallbacks"] == [1, 0, 0]
    assert body["breaker_trips"] == [1, 0, 0]  # the other trip lies outside the range
    assert body["prefix_hit_rate"] == [None, None, None]
    (slo,) = body["slos"]
    assert slo["slo"] == "interactive" and slo["objective"] == 0.95
    assert slo["ttft_p95_ms"] == 800
    assert slo["outcomes"] == [3, 0, 0]
    assert slo["attainment"] == [pytest.approx(2 / 3), None, None]
    assert slo["burn_rate"] == [pytest.approx((1 / 3) / 0.05), None, None]


def test_rollout_moves_are_marked(fleet: Any, client_for: Any) -> None:
    from console.policies.models import PolicyTransition, PolicyVersion

    version = PolicyVersion.objects.create(
        name="ppo", version="1", kind="trained", state="canary", registered_by_name="a"
    )
    for from_state, to_state, reason in [
        ("approved", "shadow", "watch it"),
        ("shadow", "canary", "try 10%"),
        ("canary", "active", "good"),
        ("active", "retired", "replaced by other@2"),  # part of a promotion: no mark
        ("active", "retired", "too slow"),
    ]:
        PolicyTransition.objects.create(
            version=version, from_state=from_state, to_state=to_state, actor="a", reason=reason
        )
    body = _get(client_for).json()
    assert [(m["kind"], m["policy"]) for m in body["marks"]] == [
        ("shadow", "ppo@1"),
        ("canary", "ppo@1"),
        ("promote", "ppo@1"),
        ("rollback", "ppo@1"),
    ]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "yesterday"}, "from"),
        ({"to": "2026-13-01T00:00:00Z"}, "to"),
        ({"from": "2026-11-20T12:00:00Z", "to": "2026-11-20T11:00:00Z"}, "from"),
        ({"from": "2026-11-01T00:00:00Z", "to": "2026-11-20T00:00:00Z"}, "from"),
        ({"from": "2026-11-20T00:00:00Z", "to": "2026-11-21T00:00:00Z", "step": "10"}, "step"),
        ({"step": "1"}, "step"),
        ({"step": "1e400"}, "step"),
        ({"step": "60\x00"}, "step"),
    ],
)
def test_it_refuses_unbounded_or_malformed_ranges(
    fleet: Any, client_for: Any, params: dict[str, str], field: str
) -> None:
    response = _get(client_for, **params)
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_the_default_is_the_last_hour_in_about_240_points(fleet: Any, client_for: Any) -> None:
    body = _get(client_for).json()
    assert body["step"] == 15 and 240 <= len(body["t"]) <= 241
    assert client_for(None).get("/api/v1/series/fleet").status_code == 401


def test_the_prefix_hit_rate_is_the_fleet_mean_of_node_telemetry(
    fleet: Any, client_for: Any
) -> None:
    from telemetry.storage import clear_caches, resolve_series, write_readings

    clear_caches()
    refs = [("muc-l4-1", "prefix_hit_rate", ()), ("fra-h100-1", "prefix_hit_rate", ())]
    ids = resolve_series(refs)
    other = resolve_series([("muc-l4-1", "kv_usage", ())])
    write_readings(
        [
            (ids[refs[0]], T0 + timedelta(seconds=5), 0.2),
            (ids[refs[1]], T0 + timedelta(seconds=20), 0.6),
            (ids[refs[0]], T0 + timedelta(seconds=75), 0.5),
            (next(iter(other.values())), T0 + timedelta(seconds=5), 0.9),  # another metric
        ]
    )
    body = _get(
        client_for,
        **{"from": T0.isoformat(), "to": (T0 + timedelta(minutes=3)).isoformat()},
        step="60",
    ).json()
    assert body["prefix_hit_rate"] == [pytest.approx(0.4), pytest.approx(0.5), None]
