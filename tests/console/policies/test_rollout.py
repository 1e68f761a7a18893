"""Policy versions through the API: register, evaluate, four-eyes approval, shadow, canary,
promote, rollback (manual and automatic), and the audit trail."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.utils import timezone
from rest_framework.test import APIClient

from console.placement.engine.runtime import runtime
from console.placement.models import DecisionRecord
from console.policies.canary import ArmStats, canary_check, significantly_more_breached
from console.policies.models import PolicyTransition, PolicyVersion
from tests.console.placement.conftest import SMALL_REQUEST

pytestmark = pytest.mark.django_db
REQUEST = SMALL_REQUEST


def _admin(name: str) -> APIClient:
    user = User.objects.create_user(name, password="pw-12345")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    client = APIClient()
    client.force_login(user)
    return client


class Admins:
    """Two admins, and a way to run what a request queues after commit (the evaluation
    task), which the test's enclosing transaction would otherwise hold back."""

    def __init__(self, capture: Any) -> None:
        self.alice = _admin("alice")
        self.bob = _admin("bob")
        self.capture = capture

    def __iter__(self) -> Iterator[APIClient]:
        return iter((self.alice, self.bob))


@pytest.fixture
def admins(fleet: Any, django_capture_on_commit_callbacks: Any) -> Admins:
    runtime().refresh()
    return Admins(django_capture_on_commit_callbacks)


def _register(client: APIClient, heuristic: str = "least-loaded") -> dict[str, Any]:
    response = client.post(
        "/api/v1/policies",
        {"name": heuristic, "version": "v1", "heuristic": heuristic},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def _evaluated(admins: Admins, heuristic: str = "least-loaded") -> int:
    policy = _register(admins.alice, heuristic)
    with admins.capture(execute=True):
        evaluation = admins.alice.post(
            f"/api/v1/policies/{policy['id']}/evaluate", {"seeds": [0]}, format="json"
        )
    assert evaluation.status_code == 202, evaluation.content
    return int(policy["id"])


def _act(client: APIClient, pk: int, verb: str, **body: Any) -> Any:
    """A rollout action; every one needs a reason (a test's own, or a stock one)."""
    body.setdefault("reason", f"test: {verb}")
    return client.post(f"/api/v1/policies/{pk}/{verb}", body, format="json")


def test_an_evaluation_compares_with_the_active_policy_and_every_heuristic(admins: Any) -> None:
    alice, _ = admins
    pk = _evaluated(admins)
    report = alice.get(f"/api/v1/policies/{pk}").json()["latest_evaluation"]
    assert report["status"] == "succeeded"
    assert report["baseline"] == "weighted-score@builtin"
    at_1x = report["report"]["loads"]["1"]
    assert {"least-loaded", "weighted-score", "prefix-aware", "kv-aware", "random"} <= set(
        at_1x["policies"]
    )
    assert 0.0 <= at_1x["oracle"]["slo_attainment"] <= 1.0
    assert "vs_best_heuristic_points" in report["report"]["verdict"]["1"]
    # Policies saw node state through the fleet's scrape interval, as a canary will.
    assert (
        report["report"]["telemetry_interval_s"] == settings.LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS
    )


def test_approval_needs_a_second_admin_and_an_evaluation(admins: Any) -> None:
    alice, bob = admins
    unevaluated = _register(bob, "kv-aware")["id"]
    response = _act(alice, unevaluated, "approve")
    assert response.status_code == 409 and "evaluation" in response.json()["message"]
    pk = _evaluated(admins)
    own = _act(alice, pk, "approve")
    assert own.status_code == 403 and "Four-eyes" in own.json()["message"]
    approved = _act(bob, pk, "approve", reason="beats weighted-score at 4x")
    assert approved.status_code == 200 and approved.json()["state"] == "approved"
    assert approved.json()["approved_by"] == "bob"


def _approved(admins: Admins, heuristic: str = "least-loaded") -> int:
    alice, bob = admins
    pk = _evaluated(admins, heuristic)
    assert _act(bob, pk, "approve").status_code == 200
    return pk


def test_shadow_scores_live_requests_without_acting(admins: Any, client_for: Any) -> None:
    alice, _ = admins
    pk = _approved(admins, "cost-first")
    assert _act(alice, pk, "shadow").json()["state"] == "shadow"
    service = client_for("service")
    for i in range(10):
        body = service.post(
            "/api/v1/placements", {**REQUEST, "prompt_tokens": 100 + i}, format="json"
        ).json()
        assert body["policy"]["name"] == "weighted-score"
    runtime().recorder.flush()
    stats = alice.get(f"/api/v1/policies/{pk}").json()["shadow"]
    assert stats["compared"] == 10
    assert 0.0 <= stats["agreement"] <= 1.0
    records = DecisionRecord.objects.all()
    assert {r.shadow_policy for r in records} == {"cost-first@v1"}
    assert all(r.shadow_node for r in records)


def test_a_canary_serves_its_share_sticky_per_session(admins: Any, client_for: Any) -> None:
    alice, _ = admins
    pk = _approved(admins)
    assert _act(alice, pk, "canary", canary_share=0.5).json()["state"] == "canary"
    service = client_for("service")
    arms = {}
    for session in range(60):
        seen = {
            service.post(
                "/api/v1/placements", {**REQUEST, "session_id": f"s{session}"}, format="json"
            ).json()["arm"]
            for _ in range(3)
        }
        assert len(seen) == 1  # sticky: a session never changes arm
        arms[session] = seen.pop()
    share = sum(arm == "canary" for arm in arms.values()) / len(arms)
    assert 0.25 < share < 0.75


def _outcomes(arm: str, policy: str, met: int, missed: int, cost_usd: float | None = None) -> None:
    """Decisions of `arm` with outcomes; with `cost_usd`, each has a receipt whose pick (the
    first candidate) was estimated at that cost."""
    now = timezone.now()
    receipt = (
        {"v": 1, "candidates": [{"node": "muc-l4-1", "cost_usd": cost_usd}], "rejected": {}}
        if cost_usd is not None
        else {}
    )
    rows = [
        DecisionRecord(
            id=f"{arm[:1]}{i:031d}",
            created_at=now,
            source="munich-app",
            source_site="muc-edge",
            model="llama-3.1-8b",
            slo="interactive",
            prompt_tokens=1,
            max_output_tokens=1,
            node="muc-l4-1",
            node_site="muc-edge",
            policy_name=policy,
            policy_version="v1",
            arm=arm,
            latency_us=1,
            ok=True,
            slo_met=i < met,
            ttft_ms=200 if i < met else 2000,
            e2e_ms=1000,
            outcome_at=now,
            receipt=receipt,
        )
        for i in range(met + missed)
    ]
    DecisionRecord.objects.bulk_create(rows)


def test_a_worse_canary_rolls_back_by_itself(admins: Any, settings: Any) -> None:
    alice, _ = admins
    settings.LOCUS_CANARY_MIN_OUTCOMES = 50
    pk = _approved(admins)
    _act(alice, pk, "canary", canary_share=0.2)
    PolicyVersion.objects.filter(pk=pk).update(
        state_changed_at=timezone.now() - timedelta(minutes=5)
    )
    _outcomes("active", "weighted-score", met=95, missed=5)
    _outcomes("canary", "least-loaded", met=40, missed=20)
    verdict = canary_check()
    assert verdict.startswith("automatic rollback")
    assert PolicyVersion.objects.get(pk=pk).state == "retired"
    last = PolicyTransition.objects.filter(version_id=pk).first()
    assert last is not None and last.actor == "system" and "66.7%" in last.reason


def test_a_healthy_canary_stays(admins: Any, settings: Any) -> None:
    alice, _ = admins
    settings.LOCUS_CANARY_MIN_OUTCOMES = 50
    pk = _approved(admins)
    _act(alice, pk, "canary", canary_share=0.2)
    PolicyVersion.objects.filter(pk=pk).update(
        state_changed_at=timezone.now() - timedelta(minutes=5)
    )
    _outcomes("active", "weighted-score", met=95, missed=5)
    _outcomes("canary", "least-loaded", met=59, missed=1)
    assert canary_check().startswith("healthy")
    assert PolicyVersion.objects.get(pk=pk).state == "canary"


def test_the_rollout_gives_each_arms_live_figures_with_estimated_cost(admins: Any) -> None:
    alice, _ = admins
    pk = _approved(admins)
    _act(alice, pk, "canary", canary_share=0.5)
    PolicyVersion.objects.filter(pk=pk).update(
        state_changed_at=timezone.now() - timedelta(minutes=5)
    )
    _outcomes("active", "weighted-score", met=9, missed=1, cost_usd=0.002)
    _outcomes("canary", "least-loaded", met=4, missed=0, cost_usd=0.0005)
    arms = alice.get("/api/v1/rollout").json()["arms"]
    assert arms["active"]["outcomes"] == 10
    assert arms["active"]["slo_attainment"] == pytest.approx(0.9)
    assert arms["active"]["estimated_usd_per_1k"] == pytest.approx(2.0)
    assert arms["canary"]["slo_attainment"] == pytest.approx(1.0)
    assert arms["canary"]["estimated_usd_per_1k"] == pytest.approx(0.5)


def test_the_rollout_gives_the_attainment_difference_with_its_interval(admins: Any) -> None:
    alice, _ = admins
    pk = _approved(admins)
    _act(alice, pk, "canary", canary_share=0.5)
    assert "canary_vs_active" not in alice.get("/api/v1/rollout").json()  # no outcomes yet
    PolicyVersion.objects.filter(pk=pk).update(
        state_changed_at=timezone.now() - timedelta(minutes=5)
    )
    # Newcombe's (1998) worked example, as arms: 56 of 70 against 48 of 80.
    _outcomes("active", "weighted-score", met=48, missed=32)
    _outcomes("canary", "least-loaded", met=56, missed=14)
    compared = alice.get("/api/v1/rollout").json()["canary_vs_active"]
    assert compared["slo_attainment_difference"] == pytest.approx(0.2)
    assert compared["slo_attainment_difference_95"] == pytest.approx([0.0524, 0.3339], abs=5e-5)


def test_promote_then_rollback_restores_the_previous_active(admins: Any, client_for: Any) -> None:
    alice, _ = admins
    first = _approved(admins, "least-loaded")
    _act(alice, first, "promote")
    second = _approved(admins, "kv-aware")
    assert _act(alice, second, "promote").json()["state"] == "active"
    assert PolicyVersion.objects.get(pk=first).state == "retired"
    service = client_for("service")
    assert (
        service.post("/api/v1/placements", REQUEST, format="json").json()["policy"]["name"]
        == "kv-aware"
    )
    assert _act(alice, second, "rollback", reason="p95 regressed").json()["state"] == "retired"
    assert PolicyVersion.objects.get(pk=first).state == "active"
    assert (
        service.post("/api/v1/placements", REQUEST, format="json").json()["policy"]["name"]
        == "least-loaded"
    )
    trail = list(
        PolicyTransition.objects.filter(version_id=second)
        .order_by("at", "id")
        .values_list("from_state", "to_state", "actor")
    )
    assert trail == [
        ("", "candidate", "alice"),
        ("candidate", "approved", "bob"),
        ("approved", "active", "alice"),
        ("active", "retired", "alice"),
    ]


def test_only_one_canary_at_a_time(admins: Any) -> None:
    alice, _ = admins
    a = _approved(admins, "least-loaded")
    b = _approved(admins, "kv-aware")
    _act(alice, a, "canary")
    response = _act(alice, b, "canary")
    assert response.status_code == 409 and "already in canary" in response.json()["message"]


def test_transitions_are_sent_on_the_live_stream(admins: Any) -> None:
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from console.live.events import LIVE_GROUP

    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(LIVE_GROUP, channel)
    with admins.capture(execute=True):
        pk = _register(admins.alice)["id"]

    async def receive() -> Any:
        return await asyncio.wait_for(layer.receive(channel), timeout=5)

    message = async_to_sync(receive)()
    assert message["event"]["type"] == "policy.transition"
    assert message["event"]["to_state"] == "candidate" and message["event"]["version_id"] == pk


def test_a_drop_within_sampling_noise_does_not_roll_back(admins: Any, settings: Any) -> None:
    """95.0% against 97.5% on 200 outcomes each is a 2.5-point drop, past the margin, but a
    one-sided z of 1.32: not significant at 0.99. The same rates on 1,200 outcomes each
    (z = 3.2) are."""
    alice, _ = admins
    settings.LOCUS_CANARY_MIN_OUTCOMES = 50
    pk = _approved(admins)
    _act(alice, pk, "canary", canary_share=0.5)
    PolicyVersion.objects.filter(pk=pk).update(
        state_changed_at=timezone.now() - timedelta(minutes=5)
    )
    _outcomes("active", "weighted-score", met=195, missed=5)
    _outcomes("canary", "least-loaded", met=190, missed=10)
    assert canary_check().startswith("healthy")
    DecisionRecord.objects.all().delete()
    _outcomes("active", "weighted-score", met=1170, missed=30)
    _outcomes("canary", "least-loaded", met=1140, missed=60)
    assert canary_check().startswith("automatic rollback")


def test_a_breach_share_within_noise_does_not_roll_back() -> None:
    """2 breached groups of 10 against 1 of 16 is 14 points more, past the 10-point margin, but
    a z of 1.07; 20 of 100 against 10 of 160 (z = 3.4) is significant."""
    few = ArmStats(outcomes=900, met=870, groups=10, breached=2)
    few_active = ArmStats(outcomes=900, met=870, groups=16, breached=1)
    assert not significantly_more_breached(few, few_active, 0.99)
    many = ArmStats(outcomes=9000, met=8700, groups=100, breached=20)
    many_active = ArmStats(outcomes=9000, met=8700, groups=160, breached=10)
    assert significantly_more_breached(many, many_active, 0.99)
    assert not significantly_more_breached(many_active, many, 0.99)  # fewer is never worse
