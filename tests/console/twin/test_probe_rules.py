"""Who may propose, approve, start and abort an exploration probe (a canary's rules:
docs/rollouts.md, docs/twin.md "Exploration probe"), the bounds of what may be asked, and the
ways a probe ends besides its budget."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone
from rest_framework.test import APIClient

from console.access.services import api_key_create
from console.placement.engine.runtime import Runtime, runtime
from console.twin.choices import RunStatus
from console.twin.models import ExplorationProbe
from console.twin.probe_services import probe_check
from optimizer.topology_files import parse_topology
from tests.console.twin.probe_fleet import PROBE_FLEET, SHORT, calibration_run, idle

pytestmark = pytest.mark.django_db
PROPOSE = {"nodes": ["fra-a10-1"], "reason": "see the A10"}


@pytest.fixture
def probe_engine(db: Any, engine_settings: Any) -> Runtime:
    from console.inventory.services import topology_import

    topology_import(topology=parse_topology(PROBE_FLEET))
    rt = runtime()
    rt.refresh()
    return rt


def _key_client(name: str, role: str, owner: User | None = None) -> APIClient:
    client = APIClient()
    issued = api_key_create(name=name, role=role, owner=owner)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    return client


def _post(client: Any, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, body, format="json")


def _step(client: Any, pk: int, verb: str, reason: str = "why") -> int:
    return int(_post(client, f"/api/v1/probes/{pk}/{verb}", {"reason": reason}).status_code)


def _propose(client: Any, **extra: Any) -> int:
    response = _post(client, "/api/v1/probes", {**PROPOSE, **extra})
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def test_only_admins_propose_and_step_and_everyone_reading_may_read(
    probe_engine: Runtime, client_for: Any
) -> None:
    for role in ("operator", "viewer", "service"):
        assert _post(client_for(role), "/api/v1/probes", PROPOSE).status_code == 403, role
    pk = _propose(client_for("admin"))
    assert _step(client_for("operator"), pk, "approve", "x") == 403
    assert _step(client_for("operator"), pk, "abort", "x") == 403
    assert client_for("viewer").get(f"/api/v1/probes/{pk}").status_code == 200
    assert client_for(None).get("/api/v1/probes").status_code in (401, 403)


def test_four_eyes_a_proposer_may_not_approve_their_own_probe(
    probe_engine: Runtime, client_for: Any
) -> None:
    user = User.objects.create_user("alice", password="pw-12345")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    alice = APIClient()
    alice.force_login(user)
    pk = _propose(alice)
    # Neither she nor a key she owns may approve it.
    refused = _post(alice, f"/api/v1/probes/{pk}/approve", {"reason": "mine"})
    assert refused.status_code == 403 and "Four-eyes" in refused.json()["message"]
    own_key = _key_client("alice-key", "admin", owner=user)
    assert _step(own_key, pk, "approve", "mine") == 403
    # A key without a person may not approve or start anything.
    personless = _key_client("ci", "admin")
    assert _step(personless, pk, "approve", "x") == 403
    # Starting before approval is out of order.
    assert _step(alice, pk, "start", "x") == 409
    assert _step(client_for("admin"), pk, "approve", "ok") == 200
    assert _step(personless, pk, "start", "x") == 403
    assert _step(alice, pk, "start", "go") == 200
    # Only one probe runs at a time.
    other = _propose(alice)
    _post(client_for("admin"), f"/api/v1/probes/{other}/approve", {"reason": "ok"})
    assert _step(alice, other, "start", "go") == 409
    # A key without a person may abort (as it may roll a canary back); decisions return to
    # the policy's at once.
    aborted = _post(personless, f"/api/v1/probes/{pk}/abort", {"reason": "stop"})
    assert aborted.status_code == 200 and aborted.json()["state"] == "aborted"
    assert probe_engine.engine.snapshot is not None
    assert probe_engine.engine.snapshot.probe is None
    assert _step(alice, pk, "start", "again") == 409


def test_a_probe_proposed_by_no_person_needs_two_people(
    probe_engine: Runtime, client_for: Any
) -> None:
    pk = _propose(_key_client("ci", "admin"))
    approver = client_for("admin")
    assert _step(approver, pk, "approve", "ok") == 200
    refused = _post(approver, f"/api/v1/probes/{pk}/start", {"reason": "go"})
    assert refused.status_code == 403 and "another person" in refused.json()["message"]
    assert _step(client_for("admin"), pk, "start", "go") == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"share": 0}, "share"),
        ({"share": 0.0501}, "share"),
        ({"share": -0.01}, "share"),
        ({"share": "0.01"}, "share"),
        ({"share": 1e308}, "share"),
        ({"max_requests": 0}, "max_requests"),
        ({"max_requests": -5}, "max_requests"),
        ({"max_requests": 10**30}, "max_requests"),
        ({"max_requests": 10.5}, "max_requests"),
        ({"hours": 0}, "hours"),
        ({"hours": 1e12}, "hours"),
        ({"min_observations": 0}, "min_observations"),
        ({"nodes": ["no-such-node"]}, "nodes"),
        ({"nodes": []}, "nodes"),
        ({"nodes": "fra-a10-1"}, "nodes"),
        ({"nodes": None}, "nodes"),
        ({"calibration_run": 999999}, "calibration_run"),
        ({"calibration_run": -1}, "calibration_run"),
        ({"reason": ""}, "reason"),
        ({"reason": "a\x00b"}, "reason"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    probe_engine: Runtime, client_for: Any, body: dict[str, Any], field: str
) -> None:
    response = _post(client_for("admin"), "/api/v1/probes", {**PROPOSE, **body})
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"], response.json()
    assert not ExplorationProbe.objects.exists()


def test_a_probe_needs_a_run_or_nodes_and_a_run_that_saw_too_little(
    probe_engine: Runtime, client_for: Any
) -> None:
    admin = client_for("admin")
    response = _post(admin, "/api/v1/probes", {"reason": "x"})
    assert response.status_code == 400 and "calibration_run" in response.json()["errors"]
    failed = calibration_run(status=RunStatus.FAILED)
    response = _post(admin, "/api/v1/probes", {"reason": "x", "calibration_run": failed.pk})
    assert response.status_code == 400 and "calibration_run" in response.json()["errors"]
    # A run that fitted everything on the inventory's nodes leaves nothing to probe.
    seen = calibration_run(unfitted="l4")
    response = _post(admin, "/api/v1/probes", {"reason": "x", "calibration_run": seen.pk})
    assert response.status_code == 400 and "calibration_run" in response.json()["errors"]
    # Nodes narrow a run's targets; each says why the run's report made it one (a profile
    # with too few requests, and no per-value statuses in this report).
    run = calibration_run()
    pk = _propose(admin, calibration_run=run.pk, nodes=["use-a10-1", "fra-h100-1"])
    assert ExplorationProbe.objects.get(pk=pk).targets == [
        {
            "node": "use-a10-1",
            "model": "llama-3.1-8b",
            "profile_status": "insufficient_data",
            "held": [],
        }
    ]
    # Nodes alone: every model each serves, with no report behind it.
    named = client_for("viewer").get(f"/api/v1/probes/{_propose(admin)}").json()
    assert named["targets"] == [
        {"node": "fra-a10-1", "model": "llama-3.1-8b", "profile_status": "", "held": []}
    ]


def _started(client_for: Any, **extra: Any) -> int:
    pk = _propose(client_for("admin"), **extra)
    admin = client_for("admin")
    assert _step(admin, pk, "approve", "ok") == 200
    assert _step(admin, pk, "start", "go") == 200
    return pk


def test_a_probe_ends_at_its_deadline(probe_engine: Runtime, client_for: Any) -> None:
    pk = _started(client_for, share=0.05)
    assert "running" in probe_check()
    ExplorationProbe.objects.filter(pk=pk).update(ends_at=timezone.now() - timedelta(seconds=1))
    probe_engine.refresh()
    assert probe_engine.engine.snapshot is not None
    assert probe_engine.engine.snapshot.probe is None  # past its deadline: not carried
    assert "deadline passed" in probe_check()
    assert ExplorationProbe.objects.get(pk=pk).state == "completed"


def test_a_probe_ends_once_every_target_is_observed_enough(
    probe_engine: Runtime, client_for: Any
) -> None:
    pk = _started(client_for, share=0.05, min_observations=3)
    service = client_for("service")
    sent = 0
    for i in range(400):
        idle(probe_engine)
        answer = _post(service, "/api/v1/placements", {**SHORT, "session_id": f"s-{i}"}).json()
        if answer["node"] == "fra-a10-1":
            outcome = {"ok": True, "ttft_ms": 300.0, "e2e_ms": 3000.0}
            url = f"/api/v1/placements/{answer['decision_id']}/outcome"
            assert _post(service, url, outcome).status_code == 200
            sent += 1
        if sent == 3:
            break
    assert sent == 3
    probe_engine.recorder.flush()
    said = probe_check()
    assert "every target has 3 observations" in said
    probe = ExplorationProbe.objects.get(pk=pk)
    assert probe.state == "completed" and probe.sent == 3
