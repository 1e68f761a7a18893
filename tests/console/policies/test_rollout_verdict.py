"""`GET /api/v1/rollout` during a canary: the verdict from the attainment difference's 95%
interval, the elapsed time, the watchdog's judgement and next check, the headline cost, and
the evaluation defaults the Policies page offers (console/policies/canary_report.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.utils import timezone

from console.placement.engine.runtime import runtime
from console.placement.models import DecisionRecord
from console.policies.canary import canary_check
from console.policies.models import PolicyVersion
from tests.console.policies.test_rollout import Admins, _register
from tests.console.policies.test_rollout_attribution import (
    PRICE,
    _canary_started,
    _receipt,
    _record,
    _running,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def admins(fleet: Any, django_capture_on_commit_callbacks: Any) -> Admins:
    runtime().refresh()
    cache.clear()
    return Admins(django_capture_on_commit_callbacks)


def _outcomes(arm: str, met: int, missed: int, at: datetime, node: str = "muc-l4-1") -> None:
    """`met + missed` served outcomes on `arm`, the first `met` of them within their SLO."""
    rows = []
    for n in range(met + missed):
        row = _record(n, arm, node, at, _receipt(node))
        row.slo_met = n < met
        rows.append(row)
    DecisionRecord.objects.bulk_create(rows)


def test_a_canary_clearly_better_is_winning(admins: Admins) -> None:
    alice = _canary_started(admins)
    at = timezone.now() - timedelta(minutes=2)
    _outcomes("canary", met=198, missed=2, at=at)
    _outcomes("active", met=170, missed=30, at=at)
    body = alice.get("/api/v1/rollout").json()
    assert body["verdict"]["verdict"] == "winning"
    low, high = body["canary_vs_active"]["slo_attainment_difference_95"]
    assert 0 < low < body["canary_vs_active"]["slo_attainment_difference"] < high
    # Started five minutes ago (the fixture), read a moment later.
    assert 300 <= body["elapsed_s"] < 360
    assert body["watchdog"]["state"] == "healthy"


def test_a_canary_clearly_worse_is_losing_and_the_watchdog_would_roll_it_back(
    admins: Admins,
) -> None:
    alice = _canary_started(admins)
    at = timezone.now() - timedelta(minutes=2)
    _outcomes("canary", met=150, missed=50, at=at)
    _outcomes("active", met=196, missed=4, at=at)
    body = alice.get("/api/v1/rollout").json()
    assert body["verdict"]["verdict"] == "losing"
    assert body["canary_vs_active"]["slo_attainment_difference_95"][1] < 0
    assert body["watchdog"]["state"] == "rollback"
    assert body["watchdog"]["said"].startswith("automatic rollback: SLO attainment 75.0%")


def test_a_close_race_is_not_yet_decided_and_the_watchdog_waits_for_outcomes(
    admins: Admins,
) -> None:
    alice = _canary_started(admins)
    at = timezone.now() - timedelta(minutes=2)
    _outcomes("canary", met=19, missed=1, at=at)
    _outcomes("active", met=18, missed=2, at=at)
    body = alice.get("/api/v1/rollout").json()
    assert body["verdict"]["verdict"] == "undecided"
    low, high = body["canary_vs_active"]["slo_attainment_difference_95"]
    assert low < 0 < high
    assert body["watchdog"]["state"] == "waiting"
    assert body["watchdog"]["said"] == "waiting: 20 canary and 20 active outcomes"


def test_before_any_outcome_there_is_no_verdict(admins: Admins) -> None:
    body = _canary_started(admins).get("/api/v1/rollout").json()
    assert body["verdict"] == {"verdict": "undecided", "why": "both arms need outcomes first"}
    assert "canary_vs_active" not in body
    assert body["cost"]["canary_usd_per_1k"] is None and body["cost"]["canary_vs_active"] is None


def test_the_watchdog_next_check_follows_its_last_one(admins: Admins) -> None:
    alice = _canary_started(admins)
    before = alice.get("/api/v1/rollout").json()["watchdog"]
    assert before["last_check_at"] is None and before["next_check_at"] is None
    assert before["period_s"] == 30.0
    said = canary_check()
    after = alice.get("/api/v1/rollout").json()["watchdog"]
    assert after["last_said"] == said == "waiting: 0 canary and 0 active outcomes"
    last = datetime.fromisoformat(after["last_check_at"])
    assert datetime.fromisoformat(after["next_check_at"]) == last + timedelta(seconds=30)


def test_the_watchdog_check_of_an_earlier_canary_is_not_shown(admins: Admins) -> None:
    alice = _canary_started(admins)
    canary_check()
    cache.set(
        "locus:canary-watchdog:last",
        {**cache.get("locus:canary-watchdog:last"), "version_id": -1},
        timeout=None,
    )
    assert alice.get("/api/v1/rollout").json()["watchdog"]["last_check_at"] is None


def test_the_headline_cost_is_the_attributed_one(admins: Admins) -> None:
    alice = _canary_started(admins)
    at = timezone.now() - timedelta(minutes=2)
    DecisionRecord.objects.bulk_create(
        [
            _record(0, "active", "muc-l4-1", at, _receipt("muc-l4-1")),
            _record(1, "canary", "fra-h100-1", at, _receipt("fra-h100-1")),
        ]
    )
    _running([("muc-l4-1", at + timedelta(seconds=2), 4.0), ("fra-h100-1", at, 1.0)])
    body = alice.get("/api/v1/rollout").json()
    cost, arms = body["cost"], body["arms"]
    canary, active = (arms[a]["attributed_usd_per_1k"] for a in ("canary", "active"))
    assert cost["headline"] == "attributed_usd_per_1k"
    assert cost["canary_usd_per_1k"] == canary and cost["active_usd_per_1k"] == active
    # The H100 costs 2.9 / 0.8 of the L4 an hour and decoded in a smaller batch.
    assert cost["canary_vs_active"] == pytest.approx(canary / active)
    assert cost["canary_vs_active"] > PRICE["fra-h100-1"] / PRICE["muc-l4-1"]
    # Both receipts estimated the same cost: the estimate's ratio is 1.
    assert cost["estimated_canary_vs_active"] == pytest.approx(1.0)


def test_without_a_canary_there_is_no_verdict(admins: Admins) -> None:
    body = admins.alice.get("/api/v1/rollout").json()
    assert body["canary"] is None
    assert not {"verdict", "watchdog", "cost", "elapsed_s"} & set(body)


def test_evaluations_default_to_the_configured_loads_and_seeds(
    admins: Admins, settings: Any
) -> None:
    settings.LOCUS_EVALUATION_SEEDS = [0, 1, 2]
    settings.LOCUS_EVALUATION_LOADS = [1.0, 4.0]
    alice = admins.alice
    assert alice.get("/api/v1/rollout").json()["evaluation_defaults"] == {
        "loads": [1.0, 4.0],
        "seeds": [0, 1, 2],
    }
    policy = _register(alice)
    queued = alice.post(f"/api/v1/policies/{policy['id']}/evaluate", {}, format="json")
    assert queued.status_code == 202, queued.content
    assert queued.json()["seeds"] == [0, 1, 2] and queued.json()["loads"] == [1.0, 4.0]
    assert PolicyVersion.objects.get(pk=policy["id"]).evaluations.get().seeds == [0, 1, 2]
