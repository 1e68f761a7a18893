"""tools/demo_breach_check.py on a database as the demo writes it (the console's own tables,
made by its migrations, with the demo's inventory): each criterion passes on a clean window
and fails on its own fault. The tool reads SQLite, the demo's embedded database: on the test
run's SQLite connection it sees what the test wrote."""

from __future__ import annotations

import argparse
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db import connection

from console.demo.management.commands.demo_prepare import DEMO_TOPOLOGY
from console.inventory.models import Slo
from console.placement.models import DecisionRecord
from telemetry.models import BreachNode, SlaBreach
from tools import demo_breach_check

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 26, 20, 0, tzinfo=UTC)


@pytest.fixture
def demo_db(db: None) -> sqlite3.Connection:
    """The demo's inventory in the test database, and its SQLite connection."""
    if connection.vendor != "sqlite":
        pytest.skip("the tool reads the demo's SQLite database")
    call_command("load_topology", str(DEMO_TOPOLOGY), verbosity=0)
    connection.ensure_connection()
    raw = connection.connection
    assert isinstance(raw, sqlite3.Connection)
    return raw


def _decisions(met: int, total: int = 60) -> None:
    """`total` interactive-eu decisions 15 s apart (15 minutes), the first `met` within
    targets."""
    DecisionRecord.objects.bulk_create(
        DecisionRecord(
            id=f"d{i}",
            created_at=T0 + timedelta(seconds=15 * i),
            outcome_at=T0 + timedelta(seconds=15 * i + 5),
            source="app",
            model="llama-3.1-8b",
            slo="interactive-eu",
            prompt_tokens=100,
            max_output_tokens=10,
            node="fra-h100-1",
            node_site="fra-core",
            policy_name="weighted-score",
            policy_version="builtin",
            latency_us=100.0,
            ok=True,
            slo_met=i < met,
        )
        for i in range(total)
    )


def _breach(*, opened_s: float, resolved_s: float | None, severity: str, node: str) -> None:
    breach = SlaBreach.objects.create(
        slo="interactive-eu",
        metric="within_targets",
        severity=severity,
        status="open" if resolved_s is None else "resolved",
        objective=0.95,
        threshold=14.4,
        observed=15.0,
        worst=15.0,
        samples=40,
        opened_at=T0 + timedelta(seconds=opened_s),
        last_firing_at=T0 + timedelta(seconds=opened_s),
        resolved_at=None if resolved_s is None else T0 + timedelta(seconds=resolved_s),
    )
    BreachNode.objects.create(
        breach=breach, node=node, model="llama-3.1-8b", requests=40, bad=30, burn_rate=15.0
    )


def _check(db: sqlite3.Connection, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    assert Slo.objects.get(name="interactive-eu").residency == "EU"
    args = argparse.Namespace(since=None, until=None, window=900.0, max_opens=3)
    ok = demo_breach_check.check(db, args)
    return (0 if ok else 1), capsys.readouterr().out


def test_a_clean_window_passes(
    demo_db: sqlite3.Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    _decisions(met=40)  # 67%: a page-level breach agrees with the tile
    _breach(opened_s=100, resolved_s=200, severity="page", node="fra-h100-1")
    status, out = _check(demo_db, capsys)
    assert status == 0, out
    assert "decisions 60, outcomes 60" in out


def test_a_resident_slo_breach_on_a_us_node_fails(
    demo_db: sqlite3.Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    _decisions(met=40)
    _breach(opened_s=100, resolved_s=200, severity="page", node="ash-a100-1")
    status, out = _check(demo_db, capsys)
    assert status == 1
    assert "outside the jurisdiction: 1" in out and "-> FAIL" in out


def test_a_fourth_open_of_one_alert_fails(
    demo_db: sqlite3.Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    _decisions(met=40)
    for n in range(4):
        _breach(opened_s=100 + 60 * n, resolved_s=130 + 60 * n, severity="page", node="fra-h100-1")
    status, out = _check(demo_db, capsys)
    assert status == 1
    assert "max opens per alert (SLO, model, node, SLI, severity): 4 -> FAIL" in out


def test_an_open_page_breach_on_an_slo_meeting_its_objective_fails(
    demo_db: sqlite3.Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    _decisions(met=58)  # the tile at the last decision: 58 of the 59 before it
    _breach(opened_s=800, resolved_s=None, severity="page", node="fra-h100-1")
    status, out = _check(demo_db, capsys)
    assert status == 1
    assert "interactive-eu: 98.31% (58/59)" in out
    assert "meets 95%, at the end: 1 -> FAIL" in out
