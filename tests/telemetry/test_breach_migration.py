"""Migration 0003: breaches from before burn-rate rules are closed and made consistent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("telemetry", "0002_admin_names")]
AFTER = [("telemetry", "0003_burn_rate_breaches")]


def test_it_resolves_open_threshold_breaches_and_ones_resolved_before_they_opened() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps.get_model("telemetry", "SlaBreach")
    opened = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    row = {
        "slo": "interactive-eu",
        "model": "llama-3.1-8b",
        "metric": "ttft_p95_ms",
        "threshold": 6000.0,
        "observed": 6129.58,
        "worst": 6129.58,
        "samples": 40,
    }
    still_open = old.objects.create(node="ash-a100-1", status="open", opened_at=opened, **row)
    early = old.objects.create(
        node="nyc-l40s-1",
        status="resolved",
        opened_at=opened,
        resolved_at=opened - timedelta(seconds=1.9),
        **row,
    )

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("telemetry", "SlaBreach")
    closed = new.objects.get(pk=still_open.pk)
    assert closed.status == "resolved" and closed.resolved_at >= closed.opened_at
    assert closed.severity == "" and closed.metric == "ttft_p95_ms"
    assert new.objects.get(pk=early.pk).resolved_at == opened
    # From here on the database itself refuses a breach resolved before it opened.
    with pytest.raises(IntegrityError):
        new.objects.create(
            status="resolved", opened_at=opened, resolved_at=opened - timedelta(seconds=1), **row
        )
