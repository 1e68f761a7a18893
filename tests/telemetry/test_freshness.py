"""Fresh state for the decision engine, and node.freshness events when it changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from telemetry.freshness import freshness_check
from telemetry.selectors import latest_fleet_state, latest_node_state

pytestmark = pytest.mark.django_db


def test_latest_state_carries_values_and_their_age(fleet: Any, push: Any) -> None:
    ts = datetime.now(UTC) - timedelta(seconds=4)
    push(
        "samples",
        {
            "samples": [
                {
                    "node": "muc-l4-1",
                    "ts": ts.isoformat(),
                    "metrics": {"queue_depth": 2, "power_w": 70},
                }
            ]
        },
    )
    state = latest_node_state("muc-l4-1")
    assert state is not None
    assert state.queue_depth == 2 and state.power_w == 70
    assert state.updated_at == ts
    assert 4 <= state.age_s() < 30 and not state.is_stale()
    assert set(latest_fleet_state()) == {"muc-l4-1"}
    assert latest_node_state("fra-h100-1") is None


def test_nodes_going_stale_and_fresh_again_are_announced(
    fleet: Any, push: Any, events: list[dict[str, Any]], settings: Any, client_for: Any
) -> None:
    settings.LOCUS_TELEMETRY_STALE_SECONDS = 30
    now = datetime.now(UTC)
    push(
        "samples",
        {"samples": [{"node": "muc-l4-1", "ts": now.isoformat(), "metrics": {"queue_depth": 1}}]},
    )
    assert [(e["node"], e["fresh"]) for e in events] == [("muc-l4-1", True)]
    assert freshness_check(now=now) == {"fra-h100-1": False, "muc-l4-1": True}
    assert events[-1] == {**events[-1], "node": "fra-h100-1", "fresh": False, "age_s": None}
    events.clear()
    assert freshness_check(now=now) == {"fra-h100-1": False, "muc-l4-1": True}
    assert events == []  # nothing changed, nothing announced
    freshness_check(now=now + timedelta(seconds=31))
    assert [(e["node"], e["fresh"], e["type"]) for e in events] == [
        ("muc-l4-1", False, "node.freshness")
    ]
    push(
        "samples",
        {
            "samples": [
                {
                    "node": "muc-l4-1",
                    "ts": datetime.now(UTC).isoformat(),
                    "metrics": {"queue_depth": 1},
                }
            ]
        },
    )
    assert events[-1]["fresh"] is True
    latest = client_for("viewer").get("/api/v1/telemetry/latest").json()
    assert latest["muc-l4-1"]["queue_depth"] == 1 and latest["muc-l4-1"]["stale"] is False


def test_metrics_carry_telemetry_age_per_node_and_the_stale_count(
    fleet: Any, push: Any, settings: Any, client_for: Any
) -> None:
    settings.LOCUS_TELEMETRY_STALE_SECONDS = 30
    ts = datetime.now(UTC) - timedelta(seconds=4)
    sample = {"node": "muc-l4-1", "ts": ts.isoformat(), "metrics": {"queue_depth": 1}}
    push("samples", {"samples": [sample]})

    def gauges() -> dict[str, dict[str, float]]:
        text = client_for(None).get("/metrics").content.decode()
        return {
            family.name: {s.labels.get("node", ""): s.value for s in family.samples}
            for family in text_string_to_metric_families(text)
            if family.name in ("locus_telemetry_age_seconds", "locus_telemetry_stale_nodes")
        }

    now = gauges()
    assert set(now["locus_telemetry_age_seconds"]) == {"muc-l4-1"}  # fra-h100-1 never reported
    assert 4 <= now["locus_telemetry_age_seconds"]["muc-l4-1"] < 30
    assert now["locus_telemetry_stale_nodes"] == {"": 1}
    settings.LOCUS_TELEMETRY_STALE_SECONDS = 2
    assert gauges()["locus_telemetry_stale_nodes"] == {"": 2}


def test_metrics_show_accepted_batches_waiting_in_the_inbox(
    fleet: Any, service: Any, client_for: Any, django_capture_on_commit_callbacks: Any
) -> None:
    def inbox() -> dict[str, float]:
        text = client_for(None).get("/metrics").content.decode()
        return {
            family.name: family.samples[0].value
            for family in text_string_to_metric_families(text)
            if family.name.startswith("locus_telemetry_inbox")
        }

    assert inbox() == {
        "locus_telemetry_inbox_batches": 0,
        "locus_telemetry_inbox_oldest_seconds": 0,
    }
    sample = {"node": "muc-l4-1", "ts": datetime.now(UTC).isoformat(), "metrics": {"running": 1}}
    with django_capture_on_commit_callbacks(execute=False):  # accepted; no worker took it yet
        accepted = service.post("/api/v1/telemetry/samples", {"samples": [sample]}, format="json")
    assert accepted.status_code == 202
    waiting = inbox()
    assert waiting["locus_telemetry_inbox_batches"] == 1
    assert 0 <= waiting["locus_telemetry_inbox_oldest_seconds"] < 30
