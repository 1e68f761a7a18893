"""Writes decision records, outcomes and stream events off the request thread, in batches.

Requests only append to an in-memory queue. A background thread drains it every
`flush_interval_s` (or sooner when `batch_size` items wait): one bulk INSERT for the new
records, then the outcome updates, in one transaction. When the database is down the items
stay buffered and are retried with backoff; past `max_buffer` the oldest are dropped and
counted (`locus_decision_records_dropped_total`), so memory stays bounded.

The live stream gets a bounded view of the decisions: every `summary_interval_s` one
`decision.summary` event with counts per node and policy, plus at most
`sampled_per_interval` individual `decision` events (docs/contracts.md §4 streams; the dashboard
says on screen that it shows a sample).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction

from console.dbutil import release_connections
from console.placement.metrics import RECORDS_DROPPED

logger = logging.getLogger(__name__)


@dataclass
class RecorderStats:
    written: int = 0
    outcomes: int = 0
    dropped: int = 0
    failures: int = 0
    last_error: str = ""


@dataclass
class Recorder:
    """The background writer. `write_batch` does the database work (injected for tests)."""

    write_batch: Callable[[list[dict[str, Any]], list[dict[str, Any]]], None]
    publish: Callable[[str, dict[str, Any]], None]
    flush_interval_s: float = 0.2
    batch_size: int = 1000
    max_buffer: int = 200_000
    summary_interval_s: float = 1.0
    sampled_per_interval: int = 20
    stats: RecorderStats = field(default_factory=RecorderStats)

    def __post_init__(self) -> None:
        self._records: deque[dict[str, Any]] = deque()
        self._outcomes: deque[dict[str, Any]] = deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._window_start = time.monotonic()
        self._by_node: Counter[str] = Counter()
        self._by_policy: Counter[str] = Counter()
        self._sampled = 0
        self._pending_events: deque[tuple[str, dict[str, Any]]] = deque(maxlen=1000)
        self._later: deque[Callable[[], None]] = deque(maxlen=10_000)
        self.tick_hooks: list[Callable[[], None]] = []

    # -- called on the request path: O(1), no I/O ------------------------------------------
    def record(self, row: dict[str, Any], event: Callable[[], dict[str, Any]]) -> None:
        """Queue a record; `event` builds its stream event, called only when sampled."""
        self._records.append(row)
        self._by_node[row["node"]] += 1
        self._by_policy[f"{row['policy_name']}@{row['policy_version']}"] += 1
        if self._sampled < self.sampled_per_interval:
            self._sampled += 1
            self._pending_events.append(("decision", event()))
        self._bound(self._records)
        if len(self._records) >= self.batch_size:
            self._wake.set()

    def outcome(self, update: dict[str, Any]) -> None:
        self._outcomes.append(update)
        self._bound(self._outcomes)

    def later(self, work: Callable[[], None]) -> None:
        """Run `work` on the background thread (rare side effects: breaker audit, SLO
        windows); a failure is logged, never raised to the request that queued it."""
        self._later.append(work)

    def _bound(self, queue: deque[dict[str, Any]]) -> None:
        while len(queue) > self.max_buffer:
            queue.popleft()
            self.stats.dropped += 1
            RECORDS_DROPPED.inc()

    # -- the background side ---------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop = False
            self._thread = threading.Thread(target=self._run, name="locus-recorder", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        backoff = self.flush_interval_s
        while not self._stop:
            self._wake.wait(backoff)
            self._wake.clear()
            try:
                ok = self.flush()
            except Exception:  # the writer thread must outlive any single failure
                logger.exception("decision recorder flush failed")
                ok = False
            backoff = self.flush_interval_s if ok else min(backoff * 2, 5.0)
        self.flush()

    def flush(self) -> bool:
        """Write what is buffered and publish due events; False if the database failed."""
        self._publish_due()
        records = [
            self._records.popleft() for _ in range(min(len(self._records), self.batch_size * 10))
        ]
        outcomes = [self._outcomes.popleft() for _ in range(len(self._outcomes))]
        if not records and not outcomes:
            self._run_side_work()
            return True
        try:
            self.write_batch(records, outcomes)
        except Exception as exc:
            # Put them back in front, in order, for the next try.
            self._records.extendleft(reversed(records))
            self._outcomes.extendleft(reversed(outcomes))
            self.stats.failures += 1
            self.stats.last_error = str(exc)
            logger.warning(
                "decision records not written yet (%s buffered): %s", len(self._records), exc
            )
            release_connections()
            return False
        self.stats.written += len(records)
        self.stats.outcomes += len(outcomes)
        self._run_side_work()
        return True

    def _run_side_work(self) -> None:
        for hook in self.tick_hooks:
            self._safely(hook)
        while self._later:
            self._safely(self._later.popleft())

    @staticmethod
    def _safely(work: Callable[[], None]) -> None:
        try:
            work()
        except Exception:
            logger.warning("background work failed", exc_info=True)

    def _publish_due(self) -> None:
        while self._pending_events:
            event_type, data = self._pending_events.popleft()
            self.publish(event_type, data)
        now = time.monotonic()
        elapsed = now - self._window_start
        if elapsed < self.summary_interval_s:
            return
        total = sum(self._by_node.values())
        if total:
            self.publish(
                "decision.summary",
                {
                    "window_s": round(elapsed, 3),
                    "total": total,
                    "by_node": dict(self._by_node),
                    "by_policy": dict(self._by_policy),
                    "sampled": self._sampled,
                },
            )
        self._window_start = now
        self._by_node = Counter()
        self._by_policy = Counter()
        self._sampled = 0


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
# runtime._record_row. `fallbacks` and `prefix_hashes` are the JSON columns.
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
    "node",
    "node_site",
    "fallbacks",
    "prefix_hashes",
    "policy_name",
    "policy_version",
    "arm",
    "degraded",
    "shadow_policy",
    "shadow_node",
    "latency_us",
)
_TABLE = "placement_decisionrecord"
_COLUMNS_SQL = ", ".join(RECORD_COLUMNS)


_FALLBACKS = RECORD_COLUMNS.index("fallbacks")
_PREFIX_HASHES = RECORD_COLUMNS.index("prefix_hashes")
_CREATED_AT = RECORD_COLUMNS.index("created_at")


def _values(row: dict[str, Any]) -> list[Any]:
    values = [row[column] for column in RECORD_COLUMNS]
    values[_FALLBACKS] = json.dumps(row["fallbacks"])
    values[_PREFIX_HASHES] = json.dumps(row["prefix_hashes"])
    return values


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


# Rows per multi-row INSERT on SQLite: 50 x 20 parameters stays under the 999 that old SQLite
# builds allow.
SQLITE_ROWS_PER_STATEMENT = 50


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
    pipelines it); on SQLite an UPDATE ... FROM (VALUES ...) per 50 outcomes, for the GIL
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
