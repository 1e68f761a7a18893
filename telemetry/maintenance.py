"""Housekeeping run by Celery beat: partitions ahead, 1-minute rollups, retention.

Each job is idempotent, so a missed or repeated beat only delays it: rollups recompute the
last minutes with an upsert (late samples are folded in), partitions are created with
IF NOT EXISTS, retention drops whole partitions (PostgreSQL) instead of deleting rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from telemetry import conf
from telemetry.models import Reading, ReadingRollup
from telemetry.storage import clear_caches, ensure_partitions, existing_partitions

_ROLLUP_SQL = {
    "postgresql": (
        "INSERT INTO telemetry_readingrollup (series_id, bucket, count, sum, min, max) "
        "SELECT series_id, date_trunc('minute', ts), count(*), sum(value), min(value), "
        "max(value) FROM telemetry_reading WHERE ts >= %s AND ts < %s GROUP BY 1, 2 "
        "ON CONFLICT (series_id, bucket) DO UPDATE SET count = EXCLUDED.count, "
        "sum = EXCLUDED.sum, min = EXCLUDED.min, max = EXCLUDED.max"
    ),
    # Django stores SQLite datetimes as 'YYYY-MM-DD HH:MM:SS[.ffffff]' text in UTC.
    "sqlite": (
        "INSERT INTO telemetry_readingrollup (series_id, bucket, count, sum, min, max) "
        "SELECT series_id, strftime('%%Y-%%m-%%d %%H:%%M:00', ts) AS b, count(*), sum(value), "
        "min(value), max(value) FROM telemetry_reading WHERE ts >= %s AND ts < %s "
        "GROUP BY series_id, b ON CONFLICT (series_id, bucket) DO UPDATE SET "
        "count = excluded.count, sum = excluded.sum, min = excluded.min, max = excluded.max"
    ),
}


@dataclass(frozen=True)
class MaintenanceReport:
    """What one housekeeping run did (for logs and tests)."""

    partitions_created_through: str = ""
    partitions_dropped: int = 0
    rollup_rows: int = 0
    rollups_deleted: int = 0
    readings_deleted: int = 0


def partitions_maintain(*, now: datetime | None = None) -> MaintenanceReport:
    """Create today's and the next LOCUS_TELEMETRY_PARTITION_DAYS_AHEAD days' partitions."""
    today = (now or timezone.now()).date()
    last = today + timedelta(days=conf.partition_days_ahead())
    ensure_partitions(today - timedelta(days=1), last)
    return MaintenanceReport(partitions_created_through=last.isoformat())


def rollup_recent(*, now: datetime | None = None, minutes: int = 10) -> MaintenanceReport:
    """Recompute the 1-minute rollups of the last `minutes` complete minutes."""
    end = (now or timezone.now()).replace(second=0, microsecond=0)
    start = end - timedelta(minutes=minutes)
    return rollup_range(start=start, end=end)


def rollup_range(*, start: datetime, end: datetime) -> MaintenanceReport:
    sql = _ROLLUP_SQL["postgresql" if connection.vendor == "postgresql" else "sqlite"]
    with transaction.atomic(), connection.cursor() as cursor:
        adapt = connection.ops.adapt_datetimefield_value  # SQLite compares text
        cursor.execute(sql, [adapt(start), adapt(end)])
        count = max(cursor.rowcount, 0)
    return MaintenanceReport(rollup_rows=count)


def retention_apply(*, now: datetime | None = None) -> MaintenanceReport:
    """Drop raw readings older than the retention, and rollups older than theirs."""
    now = now or timezone.now()
    raw_cutoff = now - timedelta(days=conf.retention_days())
    rollup_cutoff = now - timedelta(days=conf.rollup_retention_days())
    dropped = deleted = 0
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                for day, name in sorted(existing_partitions().items()):
                    # A partition holds [day, day + 1): drop it once all of it is too old.
                    if day + timedelta(days=1) <= raw_cutoff.date():
                        cursor.execute(f"DROP TABLE IF EXISTS {name}")  # noqa: S608
                        dropped += 1
        else:
            deleted, _ = Reading.objects.filter(ts__lt=raw_cutoff).delete()
        rollups, _ = ReadingRollup.objects.filter(bucket__lt=rollup_cutoff).delete()
    if dropped:
        clear_caches()  # forget dropped partitions so they are recreated if written again
    return MaintenanceReport(
        partitions_dropped=dropped, rollups_deleted=rollups, readings_deleted=deleted
    )
