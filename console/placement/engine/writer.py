"""The recorder's database writes: decision records in bulk, then outcome updates, in one
transaction (console/placement/engine/recorder.py queues them and calls `write_to_database`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db import connection, transaction


def write_to_database(records: list[dict[str, Any]], outcomes: list[dict[str, Any]]) -> None:
    """One transaction: insert new decision records, then apply outcome updates.

    A retried batch may hold records an earlier, ambiguous commit already wrote, so the
    insert skips existing ids. Records go in with COPY on PostgreSQL and one executemany on
    SQLite: building a model instance per record made the ORM's bulk_create cost about as
    much CPU as the decision itself (~60 µs a record, against ~5 µs here), and this thread
    shares the GIL with the request path.
    """
    from console.placement.models import DecisionRecord

    with transaction.atomic():
        if records:
            insert = _INSERTERS.get(connection.vendor)
            if insert is not None:
                insert(records)
            else:
                DecisionRecord.objects.bulk_create(
                    [DecisionRecord(**row) for row in records], ignore_conflicts=True
                )
        if outcomes:
            _update_outcomes(outcomes)


# The columns a new record sets (the outcome columns stay NULL until reported); the keys of
# records.record_row. `fallbacks`, `receipt` and `prefix_hashes` are the JSON columns.
RECORD_COLUMNS = (
    "id",
    "created_at",
    "source",
    "source_site",
    "model",
    "slo",
    "prompt_tokens",
    "max_output_tokens",
    "session_id",
    "decided_by",
    "node",
    "node_site",
    "fallbacks",
    "prefill_node",
    "policy_name",
    "policy_version",
    "arm",
    "degraded",
    "shadow_policy",
    "shadow_node",
    "latency_us",
    "receipt",
    "prefix_hashes",
    "probe",
)
_TABLE = "placement_decisionrecord"
_COLUMNS_SQL = ", ".join(RECORD_COLUMNS)


_FALLBACKS = RECORD_COLUMNS.index("fallbacks")
_RECEIPT = RECORD_COLUMNS.index("receipt")
_PREFIX_HASHES = RECORD_COLUMNS.index("prefix_hashes")
_CREATED_AT = RECORD_COLUMNS.index("created_at")
_PROBE = RECORD_COLUMNS.index("probe")  # the last column


def _values(row: dict[str, Any]) -> list[Any]:
    """The row's column values in RECORD_COLUMNS order, its JSON columns serialised. orjson,
    not json: a receipt's dozens of floats cost 15 µs a record through `json.dumps` and 1 µs
    through orjson, on the thread that shares the GIL with the request path."""
    values = [row[column] for column in RECORD_COLUMNS[:_PROBE]]
    # A journal written before probes existed (journal.py replays it) has no `probe`.
    values.append(row.get("probe"))
    values[_FALLBACKS] = _json(row["fallbacks"])
    values[_RECEIPT] = _json(row["receipt"])
    values[_PREFIX_HASHES] = _json(row["prefix_hashes"])
    return values


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _insert_postgresql(records: list[dict[str, Any]]) -> None:
    """COPY into a per-connection staging table, then one INSERT ... ON CONFLICT DO NOTHING
    (COPY itself cannot skip existing rows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS locus_staged_decisions "
            f"(LIKE {_TABLE} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
        )
        raw = cursor.cursor  # psycopg's own cursor, for COPY
        with raw.copy(f"COPY locus_staged_decisions ({_COLUMNS_SQL}) FROM STDIN") as copy:
            for row in records:
                copy.write_row(_values(row))
        cursor.execute(
            f"INSERT INTO {_TABLE} ({_COLUMNS_SQL}) "
            f"SELECT {_COLUMNS_SQL} FROM locus_staged_decisions ON CONFLICT (id) DO NOTHING"
        )


# Rows per multi-row INSERT on SQLite: 41 x 24 parameters stays under the 999 that old SQLite
# builds allow.
SQLITE_ROWS_PER_STATEMENT = 41


def _insert_sqlite(records: list[dict[str, Any]]) -> None:
    """Multi-row INSERTs, not executemany: Python's sqlite3 releases and retakes the GIL
    around every statement step, and a step per record made the request thread wait for the
    GIL often enough to double the decision endpoint's p99 (measured with
    tests/bench/bench_decisions.py); a step per 50 records does not."""
    adapt = connection.ops.adapt_datetimefield_value
    row_sql = "(" + ", ".join("%s" for _ in RECORD_COLUMNS) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(records), SQLITE_ROWS_PER_STATEMENT):
            chunk = records[start : start + SQLITE_ROWS_PER_STATEMENT]
            params: list[Any] = []
            for row in chunk:
                values = _values(row)
                values[_CREATED_AT] = adapt(values[_CREATED_AT])
                params.extend(values)
            cursor.execute(
                f"INSERT OR IGNORE INTO {_TABLE} ({_COLUMNS_SQL}) VALUES "
                + ", ".join(row_sql for _ in chunk),
                params,
            )


OUTCOME_COLUMNS = ("ttft_ms", "e2e_ms", "ok", "slo_met", "outcome_at")


def _update_outcomes(outcomes: list[dict[str, Any]]) -> None:
    """Batched instead of an ORM update per outcome: one executemany on PostgreSQL (psycopg
    pipelines it); on SQLite an UPDATE ... FROM (VALUES ...) per 41 outcomes, for the GIL
    reason given in `_insert_sqlite` (UPDATE FROM needs SQLite 3.33; older builds fall back to
    executemany)."""
    adapt = connection.ops.adapt_datetimefield_value
    rows = [
        [u["id"], *(u[c] for c in OUTCOME_COLUMNS[:-1]), adapt(u["outcome_at"])] for u in outcomes
    ]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite" and sqlite3.sqlite_version_info >= (3, 33):
            # VALUES columns are column1 (the id), column2.. (OUTCOME_COLUMNS in order).
            assignments = ", ".join(
                f"{column} = v.column{i + 2}" for i, column in enumerate(OUTCOME_COLUMNS)
            )
            row_sql = "(" + ", ".join("%s" for _ in range(len(OUTCOME_COLUMNS) + 1)) + ")"
            for start in range(0, len(rows), SQLITE_ROWS_PER_STATEMENT):
                chunk = rows[start : start + SQLITE_ROWS_PER_STATEMENT]
                cursor.execute(
                    f"UPDATE {_TABLE} SET {assignments} FROM (VALUES "
                    + ", ".join(row_sql for _ in chunk)
                    + f") AS v WHERE {_TABLE}.id = v.column1",
                    [value for row in chunk for value in row],
                )
        else:
            assignments = ", ".join(f"{column} = %s" for column in OUTCOME_COLUMNS)
            cursor.executemany(
                f"UPDATE {_TABLE} SET {assignments} WHERE id = %s",
                [[*row[1:], row[0]] for row in rows],
            )


_INSERTERS: dict[str, Callable[[list[dict[str, Any]]], None]] = {
    "postgresql": _insert_postgresql,
    "sqlite": _insert_sqlite,
}


def utcnow() -> datetime:
    return datetime.now(UTC)
