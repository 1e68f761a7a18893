"""Time buckets computed in the database, for chart series over any step.

Django's `Trunc` only knows calendar units (minute, hour, ...); charts need steps such as 10 s
or 5 min, so `EpochBucket` maps a datetime column to the start of its step-long bucket in
epoch seconds: `FLOOR(EXTRACT(EPOCH FROM col) / step) * step` on PostgreSQL, and through
`julianday` on SQLite (julian day 2440587.5 is the Unix epoch; SQLite date functions,
https://sqlite.org/lang_datefunc.html). Grouping by it lets the database count and average
per bucket instead of shipping every row to Python.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Func, IntegerField

# Steps a chart may ask for, in seconds; `pick_step` chooses the smallest that keeps a range
# under MAX_BUCKETS points.
STEPS = (10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
MAX_BUCKETS = 1000


class EpochBucket(Func):
    """The epoch second at which the `step`-second bucket holding the column starts."""

    output_field = IntegerField()

    def __init__(self, expression: Any, step: int) -> None:
        super().__init__(expression)
        self.step = int(step)  # an int, never caller text: safe to place in the SQL

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = (
            f"CAST(FLOOR(EXTRACT(EPOCH FROM %(expressions)s) / {self.step}) * {self.step} "
            "AS BIGINT)"
        )
        return super().as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # julianday is a double: half a millisecond keeps a time exactly on a bucket's start
        # from rounding down into the previous bucket.
        template = (
            f"(CAST(((julianday(%(expressions)s) - 2440587.5) * 86400.0 + 0.0005) "
            f"/ {self.step} AS INTEGER) * {self.step})"
        )
        return super().as_sql(compiler, connection, template=template, **extra)


def pick_step(start: datetime, end: datetime, points: int = 240) -> int:
    """The smallest step in STEPS that shows [start, end) in at most `points` buckets."""
    span = (end - start).total_seconds()
    return next((s for s in STEPS if span / s <= points), STEPS[-1])


def bucket_starts(start: datetime, end: datetime, step: int) -> list[int]:
    """Every bucket's start in epoch seconds, first the one holding `start`, so that a bucket
    without data is still a point (drawn as a gap or a zero, never skipped)."""
    first = int(start.timestamp()) // step * step
    return list(range(first, int(end.timestamp()), step)) or [first]
