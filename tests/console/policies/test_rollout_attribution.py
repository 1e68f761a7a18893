"""Each canary arm's attributed cost through `GET /api/v1/rollout`: served requests priced
from their receipt's prefill estimate, their reported latencies and their node's `running`
telemetry while they decoded (console/policies/attribution.py, optimizer/attribution.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from console.placement.engine.runtime import runtime
from console.placement.models import DecisionRecord
from console.policies.models import PolicyVersion
from tests.console.policies.test_rollout import Admins, _act, _approved

pytestmark = pytest.mark.django_db
PRICE = {"muc-l4-1": 0.8, "fra-h100-1": 2.9}  # USD an hour (tests/console/placement/conftest.py)


@pytest.fixture
def admins(fleet: Any, django_capture_on_commit_callbacks: Any) -> Admins:
    runtime().refresh()
    return Admins(django_capture_on_commit_callbacks)


def _record(
    n: int,
    arm: str,
    node: str,
    at: datetime,
    receipt: dict[str, Any],
    e2e_ms: float = 9000,
    ok: bool = True,
) -> DecisionRecord:
    return DecisionRecord(
        id=f"{arm[:1]}{n:031d}",
        created_at=at,
        source="munich-app",
        source_site="muc-edge",
        model="llama-3.1-8b",
        slo="interactive",
        prompt_tokens=1000,
        max_output_tokens=200,
        node=node,
        node_site="x",
        policy_name=arm,
        policy_version="v1",
        arm=arm,
        latency_us=1,
        ok=ok,
        slo_met=ok,
        ttft_ms=1000,  # first token 1 s after the decision,
        e2e_ms=e2e_ms,  # the last 8 s later by default
        outcome_at=at,
        receipt=receipt,
    )


def _receipt(node: str, version: int = 2) -> dict[str, Any]:
    pick: dict[str, Any] = {"node": node, "cost_usd": 0.001}
    if version >= 2:
        pick["prefill_ms"] = 500.0
    return {"v": version, "candidates": [pick], "rejected": {}}


def _canary_started(admins: Admins) -> Any:
    """A 50% canary that started five minutes ago; the admin client that started it."""
    alice, _ = admins
    pk = _approved(admins)
    _act(alice, pk, "canary", canary_share=0.5)
    PolicyVersion.objects.filter(pk=pk).update(
        state_changed_at=timezone.now() - timedelta(minutes=5)
    )
    return alice


def _running(readings: list[tuple[str, datetime, float]]) -> None:
    from telemetry.storage import clear_caches, resolve_series, write_readings

    clear_caches()
    ids = resolve_series({(node, "running", ()) for node, _, _ in readings})
    write_readings([(ids[(node, "running", ())], ts, value) for node, ts, value in readings])


def test_it_prices_each_served_request_from_what_was_measured(admins: Any) -> None:
    alice = _canary_started(admins)
    at = timezone.now() - timedelta(minutes=2)
    DecisionRecord.objects.bulk_create(
        [
            _record(0, "active", "muc-l4-1", at, _receipt("muc-l4-1")),
            _record(1, "canary", "fra-h100-1", at, _receipt("fra-h100-1")),
            # Not attributable: a version-1 receipt (no prefill estimate), and a node whose
            # telemetry has no reading.
            _record(2, "canary", "fra-h100-1", at, _receipt("fra-h100-1", version=1)),
            _record(3, "canary", "use-h100-1", at, _receipt("use-h100-1")),
            # Nor a latency no request has: it would stretch the telemetry read past year 9999.
            _record(4, "active", "muc-l4-1", at, _receipt("muc-l4-1"), e2e_ms=1e300),
            # Nor a failed request: it has no decode to share.
            _record(5, "active", "muc-l4-1", at, _receipt("muc-l4-1"), ok=False),
        ]
    )
    _running(
        [
            # muc-l4-1 ran 3 then 5 sequences while the request decoded (1 s to 9 s): 4.
            ("muc-l4-1", at + timedelta(seconds=2), 3.0),
            ("muc-l4-1", at + timedelta(seconds=6), 5.0),
            ("muc-l4-1", at + timedelta(seconds=30), 50.0),  # after it finished
            # fra-h100-1's last reading came 10 s before the decode: 1 other, so 2.
            ("fra-h100-1", at - timedelta(seconds=9), 1.0),
        ]
    )
    arms = alice.get("/api/v1/rollout").json()["arms"]
    active, canary = arms["active"], arms["canary"]
    assert active["outcomes"] == 3 and active["attributed_outcomes"] == 1
    assert active["attributed_usd_per_1k"] == pytest.approx(
        1000 * PRICE["muc-l4-1"] / 3600 * (0.5 + 8.0 / 4)
    )
    assert canary["outcomes"] == 3 and canary["attributed_outcomes"] == 1
    assert canary["attributed_usd_per_1k"] == pytest.approx(
        1000 * PRICE["fra-h100-1"] / 3600 * (0.5 + 8.0 / 2)
    )
    assert canary["estimated_usd_per_1k"] == pytest.approx(1.0)  # every receipt's estimate


def test_a_node_silent_for_longer_than_the_stale_bound_is_not_attributed(
    admins: Any, settings: Any
) -> None:
    settings.LOCUS_TELEMETRY_STALE_SECONDS = 30
    alice = _canary_started(admins)
    at = timezone.now() - timedelta(minutes=2)
    DecisionRecord.objects.bulk_create(
        [
            _record(0, "active", "muc-l4-1", at, _receipt("muc-l4-1")),
            _record(1, "canary", "muc-l4-1", at, _receipt("muc-l4-1")),
        ]
    )
    # The last reading is 31 s older than the first token.
    _running([("muc-l4-1", at - timedelta(seconds=30), 2.0)])
    arms = alice.get("/api/v1/rollout").json()["arms"]
    assert arms["active"]["attributed_outcomes"] == 0
    assert arms["active"]["attributed_usd_per_1k"] is None
    assert arms["canary"]["attributed_usd_per_1k"] is None
