"""Series for charts, 1-minute rollups, partitions ahead and retention."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection

from telemetry import maintenance
from telemetry.models import Reading, ReadingRollup

pytestmark = pytest.mark.django_db


def _push_minutes(push: Any, start: datetime, minutes: int) -> None:
    samples = [
        {
            "node": "muc-l4-1",
            "ts": (start + timedelta(seconds=10 * i)).isoformat(),
            "metrics": {"queue_depth": float(i)},
        }
        for i in range(6 * minutes)
    ]
    assert push("samples", {"samples": samples}).status_code == 202


def test_series_endpoint_serves_raw_points_and_averages_per_step(
    fleet: Any, push: Any, client_for: Any
) -> None:
    start = (datetime.now(UTC) - timedelta(minutes=30)).replace(second=0, microsecond=0)
    _push_minutes(push, start, 3)
    viewer = client_for("viewer")
    url = "/api/v1/nodes/muc-l4-1/telemetry"
    window = {
        "metric": "queue_depth",
        "from": start.isoformat(),
        "to": (start + timedelta(minutes=3)).isoformat(),
    }
    raw = viewer.get(url, window).json()
    assert [p[1] for p in raw["series"][0]["points"]] == [float(i) for i in range(18)]
    stepped = viewer.get(url, {**window, "step": 30}).json()
    assert [p[1] for p in stepped["series"][0]["points"]][:2] == [1.0, 4.0]  # (0+1+2)/3, ...
    assert viewer.get(url, {**window, "from": "nonsense"}).status_code == 400
    assert viewer.get("/api/v1/nodes/nope/telemetry").status_code == 404


def test_rollups_average_each_minute_and_serve_steps_of_a_minute(
    fleet: Any, push: Any, client_for: Any
) -> None:
    start = (datetime.now(UTC) - timedelta(minutes=30)).replace(second=0, microsecond=0)
    _push_minutes(push, start, 3)
    maintenance.rollup_range(start=start, end=start + timedelta(minutes=3))
    maintenance.rollup_range(start=start, end=start + timedelta(minutes=3))  # idempotent
    assert ReadingRollup.objects.count() == 3
    body = (
        client_for("viewer")
        .get(
            "/api/v1/nodes/muc-l4-1/telemetry",
            {
                "metric": "queue_depth",
                "from": start.isoformat(),
                "to": (start + timedelta(minutes=3)).isoformat(),
                "step": 60,
            },
        )
        .json()
    )
    assert [p[1] for p in body["series"][0]["points"]] == [2.5, 8.5, 14.5]


def test_retention_removes_old_readings(fleet: Any, push: Any, settings: Any) -> None:
    settings.LOCUS_TELEMETRY_RETENTION_DAYS = 2
    old = datetime.now(UTC) - timedelta(days=1, hours=23)
    _push_minutes(push, old, 1)
    assert Reading.objects.count() == 6
    report = maintenance.retention_apply(now=datetime.now(UTC) + timedelta(days=3))
    assert Reading.objects.count() == 0
    if connection.vendor == "postgresql":
        assert report.partitions_dropped >= 1


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="partitions need PostgreSQL")
def test_partitions_are_created_ahead_by_the_beat_task() -> None:
    from telemetry.storage import existing_partitions

    now = datetime.now(UTC)
    maintenance.partitions_maintain(now=now)
    days = existing_partitions()
    for offset in range(0, 4):
        assert (now + timedelta(days=offset)).date() in days
