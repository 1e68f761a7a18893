"""Four eyes by person (docs/operations.md "Four eyes"), through the real endpoints and the
`create_api_key` command: every key acts for a person, a person's keys (and keys made with
them) count as that person, a version nobody's person registered needs two people, and a key
without a person may register and read but not approve or promote."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from console.access.models import ApiKey
from console.placement.engine.runtime import runtime
from console.policies.models import PolicyVersion
from console.policies.services import policy_register
from tests.console.policies.test_rollout import Admins, _act, _evaluated, _register

pytestmark = pytest.mark.django_db


@pytest.fixture
def admins(fleet: Any, django_capture_on_commit_callbacks: Any) -> Admins:
    runtime().refresh()
    return Admins(django_capture_on_commit_callbacks)


def _bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _new_key(client: APIClient, name: str, role: str = "admin") -> dict[str, Any]:
    response = client.post("/api/v1/api-keys", {"name": name, "role": role}, format="json")
    assert response.status_code == 201, response.content
    return dict(response.json())


def _cli_key(name: str, *owner: str) -> APIClient:
    out = io.StringIO()
    call_command("create_api_key", name, "--role", "admin", *owner, stdout=out)
    return _bearer(out.getvalue().strip())


def _system_version(admins: Admins, heuristic: str = "kv-aware") -> int:
    """A version the system registered (as the demo seed and first start do), evaluated."""
    policy = policy_register(name=heuristic, version="shipped", heuristic=heuristic)
    with admins.capture(execute=True):
        evaluated = admins.alice.post(
            f"/api/v1/policies/{policy.pk}/evaluate", {"seeds": [0]}, format="json"
        )
    assert evaluated.status_code == 202, evaluated.content
    return int(policy.pk)


def test_an_admin_may_not_approve_their_own_version_with_a_key_they_made(
    admins: Admins,
) -> None:
    pk = _evaluated(admins)  # registered by alice in the browser
    key = _new_key(admins.alice, "alice-laptop")
    assert key["owner"] == "alice"
    refused = _act(_bearer(key["key"]), pk, "approve", reason="looks fine to me")
    assert refused.status_code == 403, refused.content
    assert "Four-eyes" in refused.json()["message"]
    assert PolicyVersion.objects.get(pk=pk).state == "candidate"


def test_a_key_made_with_a_key_acts_for_the_same_person(admins: Admins) -> None:
    pk = _evaluated(admins)
    first = _new_key(admins.alice, "alice-ci")
    second = _new_key(_bearer(first["key"]), "alice-ci-2")
    assert second["owner"] == "alice"
    assert ApiKey.objects.get(name="alice-ci-2").owner == User.objects.get(username="alice")
    refused = _act(_bearer(second["key"]), pk, "approve", reason="a second pair of eyes?")
    assert refused.status_code == 403, refused.content
    # Another person's key does approve.
    bobs = _new_key(admins.bob, "bob-ci")
    approved = _act(_bearer(bobs["key"]), pk, "approve", reason="reviewed")
    assert approved.status_code == 200, approved.content
    assert approved.json()["approved_by"] == "key:bob-ci"
    assert approved.json()["approved_by_person"] == "bob"
    assert approved.json()["registered_by_person"] == "alice"


@pytest.mark.parametrize("step", ["canary", "promote"])
def test_a_system_version_needs_two_people_to_approve_and_serve(admins: Admins, step: str) -> None:
    pk = _system_version(admins)
    assert _act(admins.bob, pk, "approve").status_code == 200
    # Bob's key is still Bob.
    bobs = _bearer(_new_key(admins.bob, "bob-deploy")["key"])
    for client in (admins.bob, bobs):
        refused = _act(client, pk, step, reason="ship it")
        assert refused.status_code == 403, refused.content
        assert "another person" in refused.json()["message"]
    assert PolicyVersion.objects.get(pk=pk).state == "approved"
    done = _act(admins.alice, pk, step, reason="second pair of eyes")
    assert done.status_code == 200, done.content
    assert done.json()["state"] == {"canary": "canary", "promote": "active"}[step]


def test_a_person_registered_version_may_be_promoted_by_its_registrant(admins: Admins) -> None:
    pk = _evaluated(admins)  # alice registered, bob approves: two people already
    assert _act(admins.bob, pk, "approve").status_code == 200
    assert _act(admins.alice, pk, "promote").json()["state"] == "active"


def test_a_key_without_a_person_registers_and_reads_but_never_approves_or_promotes(
    admins: Admins,
) -> None:
    robot = _cli_key("robot")
    assert ApiKey.objects.get(name="robot").owner is None
    own = _register(robot, "kv-aware")
    assert own["registered_by"] == "key:robot" and own["registered_by_person"] is None
    assert robot.get(f"/api/v1/policies/{own['id']}").status_code == 200
    pk = _evaluated(admins)
    for step in ("approve", "shadow", "canary", "promote"):
        if step == "shadow":
            assert _act(admins.bob, pk, "approve").status_code == 200
        refused = _act(robot, pk, step)
        assert refused.status_code == 403, (step, refused.content)
        assert "belongs to no person" in refused.json()["message"]
    # Stopping is always allowed: it may roll back.
    assert _act(robot, pk, "rollback", reason="pager fired").json()["state"] == "retired"


def test_a_key_without_a_person_may_not_make_keys(admins: Admins) -> None:
    refused = _cli_key("robot").post(
        "/api/v1/api-keys", {"name": "minted", "role": "admin"}, format="json"
    )
    assert refused.status_code == 403, refused.content
    assert not ApiKey.objects.filter(name="minted").exists()


def test_create_api_key_takes_an_owner(admins: Admins) -> None:
    _cli_key("alice-cli", "--owner", "alice")
    assert ApiKey.objects.get(name="alice-cli").owner == User.objects.get(username="alice")
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        _cli_key("orphan", "--owner", "nobody")
    assert not ApiKey.objects.filter(name="orphan").exists()
    listed = admins.alice.get("/api/v1/api-keys").json()["results"]
    assert {row["name"]: row["owner"] for row in listed} == {"alice-cli": "alice"}
