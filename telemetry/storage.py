"""Writing readings: series ids, then COPY (PostgreSQL) or bulk_create (SQLite).

Series are resolved outside the batch transaction (they are idempotent metadata, and creating
them in short transactions keeps two workers from deadlocking on each other's new series);
readings are written inside it. The PostgreSQL path streams rows with binary COPY
(psycopg 3 `cursor.copy`); a batch that repeats an already stored (series, ts) falls back to
`INSERT ... ON CONFLICT DO NOTHING`, so re-sent data is never stored twice.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from datetime import date, datetime, timedelta

import psycopg
from django.db import IntegrityError, connection, transaction

from telemetry.models import Reading, Series
from telemetry.parsing import LabelSet

Row = tuple[int, datetime, float]
SeriesRef = tuple[str, str, LabelSet]  # (node, metric, labels)

_lock = threading.Lock()
_series_ids: dict[SeriesRef, int] = {}
_partitions: set[date] = set()
_CACHE_LIMIT = 500_000
_PARTITIONED_TABLE = "telemetry_reading"


def clear_caches() -> None:
    """Forget cached series ids and known partitions (tests, or after manual cleanup)."""
    with _lock:
        _series_ids.clear()
        _partitions.clear()


def labels_hash(labels: LabelSet) -> int:
    """A signed 64-bit hash of a sorted label set; 0 for no labels."""
    if not labels:
        return 0
    text = "\x00".join(f"{k}\x01{v}" for k, v in labels).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big", signed=True)


def resolve_series(refs: Iterable[SeriesRef]) -> dict[SeriesRef, int]:
    """Ids of the given series, creating the missing ones."""
    wanted = set(refs)
    found = {ref: _series_ids[ref] for ref in wanted if ref in _series_ids}
    missing = sorted(wanted - found.keys(), key=lambda r: (r[0], r[1], labels_hash(r[2])))
    if not missing:
        return found
    by_key = {(n, m, labels_hash(lab)): (n, m, lab) for n, m, lab in missing}
    Series.objects.bulk_create(
        [
            Series(node=n, metric=m, labels=dict(lab), labels_hash=h)
            for (n, m, h), (_, _, lab) in by_key.items()
        ],
        ignore_conflicts=True,
        batch_size=1000,
    )
    nodes = sorted({n for n, _, _ in missing})
    metrics = sorted({m for _, m, _ in missing})
    for start in range(0, len(metrics), 500):
        rows = Series.objects.filter(node__in=nodes, metric__in=metrics[start : start + 500])
        for sid, node, metric, h in rows.values_list("id", "node", "metric", "labels_hash"):
            ref = by_key.get((node, metric, h))
            if ref is not None:
                found[ref] = sid
    with _lock:
        if len(_series_ids) > _CACHE_LIMIT:
            _series_ids.clear()
        _series_ids.update({ref: found[ref] for ref in missing if ref in found})
    return found


def write_readings(rows: list[Row]) -> None:
    """Store rows inside the caller's transaction; rows already stored are skipped."""
    if not rows:
        return
    if connection.vendor != "postgresql":
        Reading.objects.bulk_create(
            [Reading(series_id=s, ts=t, value=v) for s, t, v in rows],
            ignore_conflicts=True,
            batch_size=500,
        )
        return
    ensure_partitions(min(r[1] for r in rows).date(), max(r[1] for r in rows).date())
    try:
        with transaction.atomic():  # a savepoint: a duplicate key rolls back only the COPY
            copy_rows(rows)
    except (IntegrityError, psycopg.errors.UniqueViolation):
        _insert_ignoring_duplicates(rows)


def copy_rows(rows: Iterable[Row], table: str = _PARTITIONED_TABLE) -> None:
    """Binary COPY of (series_id, ts, value) rows (the fastest way into PostgreSQL)."""
    with connection.cursor() as cursor:
        raw: psycopg.Cursor = cursor.cursor  # the psycopg cursor under Django's wrapper
        sql = f"COPY {table} (series_id, ts, value) FROM STDIN (FORMAT BINARY)"  # noqa: S608
        with raw.copy(sql) as copy:
            copy.set_types(["int8", "timestamptz", "float8"])
            for row in rows:
                copy.write_row(row)


def _insert_ignoring_duplicates(rows: list[Row]) -> None:
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 20_000):
            chunk = rows[start : start + 20_000]
            cursor.execute(
                "INSERT INTO telemetry_reading (series_id, ts, value) "
                "SELECT * FROM unnest(%s::int8[], %s::timestamptz[], %s::float8[]) "
                "ON CONFLICT DO NOTHING",
                [[r[0] for r in chunk], [r[1] for r in chunk], [r[2] for r in chunk]],
            )


def partition_name(day: date) -> str:
    return f"{_PARTITIONED_TABLE}_p{day:%Y%m%d}"


def ensure_partitions(first: date, last: date) -> None:
    """Create the daily partitions covering [first, last] that do not exist yet (PostgreSQL)."""
    if connection.vendor != "postgresql":
        return
    day = first
    with connection.cursor() as cursor:
        while day <= last:
            if day not in _partitions:
                cursor.execute(
                    f"CREATE TABLE IF NOT EXISTS {partition_name(day)} "  # noqa: S608
                    f"PARTITION OF {_PARTITIONED_TABLE} "
                    f"FOR VALUES FROM ('{day.isoformat()}T00:00:00+00:00') "
                    f"TO ('{(day + timedelta(days=1)).isoformat()}T00:00:00+00:00')"
                )
                with _lock:
                    _partitions.add(day)
            day += timedelta(days=1)


def existing_partitions() -> dict[date, str]:
    """{day: table name} of the daily partitions (PostgreSQL; empty elsewhere)."""
    if connection.vendor != "postgresql":
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [_PARTITIONED_TABLE],
        )
        names = [row[0] for row in cursor.fetchall()]
    prefix = f"{_PARTITIONED_TABLE}_p"
    return {
        datetime.strptime(n.removeprefix(prefix), "%Y%m%d").date(): n
        for n in names
        if n.startswith(prefix)
    }
