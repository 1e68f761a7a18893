"""The recorder's writer: the fast inserts (COPY on PostgreSQL, executemany on SQLite) store
what the ORM would, a retried batch neither fails nor duplicates, and outcomes land."""

from __future__ import annotations

from typing import Any

import pytest

from console.placement.engine.writer import (
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
        "decided_by": "key:router-1",
        "node": "muc-l4-1",
        "node_site": "muc-edge",
        "fallbacks": ["fra-h100-1", "use-h100-1"],
        "prefill_node": "",
        "prefix_hashes": [11, 12, 13],
        "policy_name": "weighted-score",
        "policy_version": "builtin",
        "arm": "active",
        "degraded": "",
        "shadow_policy": "",
        "shadow_node": "",
        "latency_us": 81.5,
        "receipt": {"v": 1, "candidates": [], "rejected": {"residency": 2}},
        "probe": None,
        **extra,
    }


def test_a_probe_decision_keeps_its_probe_and_an_older_journal_row_has_none() -> None:
    """`probe` came with the exploration probe (docs/twin.md): a row journalled before it
    has no such key, and is written as a policy's answer."""
    older = _row("c" * 32)
    del older["probe"]
    write_to_database([_row("b" * 32, probe=7), older], [])
    assert DecisionRecord.objects.get(pk="b" * 32).probe == 7
    assert DecisionRecord.objects.get(pk="c" * 32).probe is None


def test_records_round_trip_through_the_orm() -> None:
    row = _row("a" * 32, degraded="scorer_slow")
    assert set(row) == set(RECORD_COLUMNS)
    write_to_database([row], [])
    stored = DecisionRecord.objects.get(pk=row["id"])
    for column in RECORD_COLUMNS:
        assert getattr(stored, column) == row[column], column
    assert stored.ok is None and stored.outcome_at is None


def test_a_split_decision_keeps_its_prefill_node() -> None:
    row = _row("b" * 32, prefill_node="fra-h100-1")
    write_to_database([row], [])
    assert DecisionRecord.objects.get(pk=row["id"]).prefill_node == "fra-h100-1"


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


def _refused(kind: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("locus_decision_records_refused_total", {"kind": kind}) or 0


def test_a_row_the_database_refuses_never_blocks_the_others(
    example_engine: Any, client_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """One record no column holds (a token count beyond 64 bits; on PostgreSQL also a NUL)
    among good ones: the good records and their outcomes are written, the bad one is logged
    once, counted and dropped, and the queue moves on."""
    from django.db import connection

    service = client_for("service")

    def decide() -> str:
        answer = service.post("/api/v1/placements", INTERACTIVE, format="json")
        return str(answer.json()["decision_id"])

    before = [decide() for _ in range(3)]
    poisons = [_row("f" * 32, prompt_tokens=2**64)]
    if connection.vendor == "postgresql":
        poisons.append(_row("e" * 32, session_id="a\x00b"))
    for poison in poisons:
        example_engine.recorder.record(poison, dict)
    after = [decide() for _ in range(3)]
    service.post(f"/api/v1/placements/{after[0]}/outcome", {"ok": True}, format="json")
    refused_before = _refused("record")
    with caplog.at_level("ERROR", logger="console.placement.engine.refusals"):
        assert example_engine.recorder.flush()
        assert example_engine.recorder.flush()  # nothing left, nothing logged again
    assert set(DecisionRecord.objects.values_list("id", flat=True)) == {*before, *after}
    assert DecisionRecord.objects.get(pk=after[0]).ok is True
    assert _refused("record") == refused_before + len(poisons)
    assert example_engine.recorder.stats.refused == len(poisons)
    logged = [r for r in caplog.records if "refused by the database" in r.getMessage()]
    assert len(logged) == len(poisons) and "f" * 32 in logged[0].getMessage()
    assert example_engine.recorder.backlog() == 0


def test_readyz_reports_a_stalled_recorder(
    example_engine: Any, client_for: Any, settings: Any
) -> None:
    from django.test import Client

    settings.LOCUS_RECORDER_STALLED_SECONDS = 0.0
    client_for("service").post("/api/v1/placements", INTERACTIVE, format="json")
    assert Client().get("/readyz").status_code == 503
    # The reason is for signed-in users only (the raw error may name hosts).
    response = client_for("viewer").get("/readyz")
    recorder = response.json()["checks"]["recorder"]
    assert recorder["status"] == "failed" and "1 decision records" in recorder["error"]
    assert example_engine.recorder.flush()
    response = Client().get("/readyz")
    assert response.status_code == 200, response.json()
