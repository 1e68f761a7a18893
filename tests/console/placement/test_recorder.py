"""The recorder's writer: the fast inserts (COPY on PostgreSQL, executemany on SQLite) store
what the ORM would, a retried batch neither fails nor duplicates, and outcomes land."""

from __future__ import annotations

from typing import Any

import pytest

from console.placement.engine.recorder import (
    RECORD_COLUMNS,
    SQLITE_ROWS_PER_STATEMENT,
    utcnow,
    write_to_database,
)
from console.placement.models import DecisionRecord
from tests.console.placement.test_decisions import INTERACTIVE

pytestmark = pytest.mark.django_db(transaction=True)


def _row(decision_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": decision_id,
        "created_at": utcnow(),
        "source": "munich-app",
        "source_site": "muc-edge",
        "model": "llama-3.1-8b",
        "slo": "interactive",
        "prompt_tokens": 900,
        "max_output_tokens": 100,
        "session_id": "s-1",
        "node": "muc-l4-1",
        "node_site": "muc-edge",
        "fallbacks": ["fra-h100-1", "use-h100-1"],
        "prefix_hashes": [11, 12, 13],
        "policy_name": "weighted-score",
        "policy_version": "builtin",
        "arm": "active",
        "degraded": "",
        "shadow_policy": "",
        "shadow_node": "",
        "latency_us": 81.5,
        **extra,
    }


def test_records_round_trip_through_the_orm() -> None:
    row = _row("a" * 32, degraded="scorer_slow")
    assert set(row) == set(RECORD_COLUMNS)
    write_to_database([row], [])
    stored = DecisionRecord.objects.get(pk=row["id"])
    for column in RECORD_COLUMNS:
        assert getattr(stored, column) == row[column], column
    assert stored.ok is None and stored.outcome_at is None


def test_a_retried_batch_skips_what_was_written_and_applies_outcomes() -> None:
    first = [_row(f"{i:032x}") for i in range(3)]
    write_to_database(first, [])
    at = utcnow()
    outcome = {"id": first[1]["id"], "ttft_ms": 120.0, "e2e_ms": 900.0, "ok": True}
    retried = [*first, _row(f"{3:032x}")]  # an ambiguous commit is retried whole
    write_to_database(retried, [{**outcome, "slo_met": True, "outcome_at": at}])
    assert DecisionRecord.objects.count() == 4
    stored = DecisionRecord.objects.get(pk=first[1]["id"])
    assert (stored.ok, stored.slo_met, stored.ttft_ms, stored.e2e_ms) == (True, True, 120, 900)
    assert stored.outcome_at == at


def test_the_running_engine_writes_through_it(example_engine: Any, client_for: Any) -> None:
    service = client_for("service")
    ids = [
        service.post("/api/v1/placements", INTERACTIVE, format="json").json()["decision_id"]
        for _ in range(5)
    ]
    service.post(f"/api/v1/placements/{ids[0]}/outcome", {"ok": False}, format="json")
    assert example_engine.recorder.flush()
    assert set(DecisionRecord.objects.values_list("id", flat=True)) == set(ids)
    assert DecisionRecord.objects.get(pk=ids[0]).ok is False


def test_batches_longer_than_one_statement_are_written_whole() -> None:
    rows = [_row(f"{i:032x}") for i in range(3 * SQLITE_ROWS_PER_STATEMENT + 7)]
    write_to_database(rows, [])
    at = utcnow()
    outcomes = [
        {"id": r["id"], "ttft_ms": float(i), "e2e_ms": 1.0, "ok": True, "slo_met": i % 2 == 0}
        for i, r in enumerate(rows)
    ]
    write_to_database([], [{**o, "outcome_at": at} for o in outcomes])
    stored = dict(DecisionRecord.objects.values_list("id", "ttft_ms"))
    assert stored == {r["id"]: float(i) for i, r in enumerate(rows)}
    assert DecisionRecord.objects.filter(slo_met=True).count() == (len(rows) + 1) // 2
