"""Rollout rules through the real endpoints: every caller has an identity (API keys too) for
the audit trail and the four-eyes rule, every human action needs a reason, promote waits for
a running canary, artifacts come only from the allowed roots in the shape `train` writes,
canary shares are strict numbers, and a method a route does not offer answers 405."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from console.access.identity import Identity
from console.access.services import api_key_create
from console.api.errors import ApplicationError
from console.placement.engine.runtime import runtime
from console.policies.four_eyes import check_people
from console.policies.models import PolicyEvaluation, PolicyTransition, PolicyVersion, TrainingRun
from tests.console.policies.test_rollout import Admins, _act, _approved, _evaluated, _register

pytestmark = pytest.mark.django_db
SHIPPED = Path(django_settings.BASE_DIR) / "optimizer" / "trained" / "ppo-fleet-demo"
VERBS = ("approve", "shadow", "canary", "promote", "rollback")


@pytest.fixture
def admins(fleet: Any, django_capture_on_commit_callbacks: Any) -> Admins:
    runtime().refresh()
    return Admins(django_capture_on_commit_callbacks)


def _key_client(name: str, role: str = "admin", owner: str | None = None) -> tuple[APIClient, int]:
    """A client sending a new key; `owner` names the person it acts for (None: nobody)."""
    person = User.objects.get(username=owner) if owner else None
    issued = api_key_create(name=name, role=role, owner=person)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    return client, issued.api_key.pk


def _trail(pk: int) -> list[tuple[str, str, str]]:
    return list(
        PolicyTransition.objects.filter(version_id=pk)
        .order_by("at", "id")
        .values_list("from_state", "to_state", "actor")
    )


# -- 1. API keys are identities --------------------------------------------------------------


def test_a_key_registers_under_its_own_name_and_may_not_approve_its_own_version(
    admins: Admins,
) -> None:
    ci, ci_id = _key_client("ci", owner="alice")
    body = _register(ci)
    pk = body["id"]
    assert body["registered_by"] == "key:ci"
    policy = PolicyVersion.objects.get(pk=pk)
    assert policy.registered_by_key_id == ci_id and policy.registered_by_id is None
    assert policy.registered_by_name == "key:ci"
    assert _trail(pk) == [("", "candidate", "key:ci")]
    with admins.capture(execute=True):
        evaluated = ci.post(f"/api/v1/policies/{pk}/evaluate", {"seeds": [0]}, format="json")
    assert evaluated.status_code == 202, evaluated.content
    assert PolicyEvaluation.objects.get(version_id=pk).requested_by_key_id == ci_id

    own = _act(ci, pk, "approve", reason="my own work")
    assert own.status_code == 403 and "Four-eyes" in own.json()["message"]
    assert PolicyVersion.objects.get(pk=pk).state == "candidate"

    # A person with a session is another identity than the key: approval passes.
    approved = _act(admins.bob, pk, "approve", reason="reviewed the evaluation")
    assert approved.status_code == 200, approved.content
    assert approved.json()["registered_by"] == "key:ci"
    assert approved.json()["approved_by"] == "bob"
    policy.refresh_from_db()
    assert policy.state == "approved" and policy.approved_by_name == "bob"


def test_an_admin_key_approves_and_acts_under_its_name(admins: Admins) -> None:
    ops, ops_id = _key_client("ops", owner="bob")
    pk = _evaluated(admins)  # registered by alice
    approved = _act(ops, pk, "approve", reason="release train 12")
    assert approved.status_code == 200, approved.content
    assert approved.json()["approved_by"] == "key:ops"
    policy = PolicyVersion.objects.get(pk=pk)
    assert policy.approved_by_key_id == ops_id and policy.approved_by_id is None
    promoted = _act(ops, pk, "promote", reason="release train 12")
    assert promoted.status_code == 200, promoted.content
    assert _trail(pk)[-2:] == [
        ("candidate", "approved", "key:ops"),
        ("approved", "active", "key:ops"),
    ]
    assert not PolicyTransition.objects.filter(version_id=pk, actor="system").exists()


def test_a_deleted_registrant_key_still_counts_for_four_eyes(admins: Admins) -> None:
    ci, ci_id = _key_client("ci")
    pk = _register(ci)["id"]
    PolicyVersion.objects.filter(pk=pk).update(registered_by_key=None)  # as if deleted
    someone = User.objects.get(username="bob").pk
    with pytest.raises(ApplicationError) as refused:
        check_people(
            PolicyVersion.objects.get(pk=pk),
            "approve",
            Identity("key:ci", key_id=ci_id, person_id=someone),
        )
    assert refused.value.status_code == 403


def test_a_training_run_started_with_a_key_registers_under_the_key(admins: Admins) -> None:
    from console.policies.training import _starter

    ci, ci_id = _key_client("ci")
    with admins.capture(execute=False):
        started = ci.post("/api/v1/training-runs", {"timesteps": 256}, format="json")
    assert started.status_code == 202, started.content
    run = TrainingRun.objects.get(pk=started.json()["id"])
    assert run.started_by_key_id == ci_id and run.started_by_name == "key:ci"
    who = _starter(run)
    assert who is not None and who.key_id == ci_id and who.name == "key:ci"


# -- 2. every human action needs a reason ------------------------------------------------------


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("body", [{}, {"reason": ""}, {"reason": "   "}, {"reason": None}])
def test_a_rollout_action_without_a_reason_is_refused(
    admins: Admins, verb: str, body: dict[str, Any]
) -> None:
    pk = _approved(admins) if verb != "approve" else _evaluated(admins)
    before = PolicyVersion.objects.get(pk=pk).state
    transitions = PolicyTransition.objects.count()
    client = admins.bob if verb == "approve" else admins.alice
    response = client.post(f"/api/v1/policies/{pk}/{verb}", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["reason"]
    assert PolicyVersion.objects.get(pk=pk).state == before
    assert PolicyTransition.objects.count() == transitions


def test_the_reason_is_kept_in_the_audit_trail(admins: Admins) -> None:
    pk = _approved(admins)
    assert _act(admins.alice, pk, "shadow", reason="  compare on live traffic ").status_code == 200
    last = PolicyTransition.objects.filter(version_id=pk).first()
    assert last is not None and last.reason == "compare on live traffic"


# -- 3. promote waits for a running canary ---------------------------------------------------


def test_promote_is_refused_while_another_version_is_in_canary(admins: Admins) -> None:
    canary = _approved(admins, "least-loaded")
    other = _approved(admins, "kv-aware")
    assert _act(admins.alice, canary, "canary", canary_share=0.2).status_code == 200
    refused = _act(admins.alice, other, "promote", reason="skip the line")
    assert refused.status_code == 409
    assert "canary" in refused.json()["message"]
    assert PolicyVersion.objects.get(pk=other).state == "approved"
    assert PolicyVersion.objects.get(pk=canary).state == "canary"
    # Finishing the canary (here: rolling it back) frees the way.
    assert _act(admins.alice, canary, "rollback", reason="not convinced").status_code == 200
    assert _act(admins.alice, other, "promote", reason="go").json()["state"] == "active"


def test_the_canary_itself_may_be_promoted(admins: Admins) -> None:
    pk = _approved(admins)
    _act(admins.alice, pk, "canary", canary_share=0.2)
    assert _act(admins.alice, pk, "promote", reason="canary healthy").json()["state"] == "active"


def test_a_direct_promote_from_approved_is_an_audited_admin_choice(admins: Admins) -> None:
    pk = _approved(admins)
    response = _act(admins.alice, pk, "promote", reason="hotfix: skip canary, on call agreed")
    assert response.status_code == 200 and response.json()["state"] == "active"
    last = PolicyTransition.objects.filter(version_id=pk).first()
    assert last is not None
    assert (last.from_state, last.to_state, last.actor) == ("approved", "active", "alice")
    assert last.reason == "hotfix: skip canary, on call agreed"


# -- 4. artifacts ------------------------------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    settings.LOCUS_ARTIFACTS_DIR = tmp_path / "artifacts"
    settings.LOCUS_ARTIFACTS_DIR.mkdir()
    return Path(settings.LOCUS_ARTIFACTS_DIR)


def _artifact(directory: Path, policy_json: Any = None, scorer: bytes | None = None) -> Path:
    directory.mkdir(parents=True)
    if scorer is None:
        shutil.copy(SHIPPED / "scorer.pt", directory / "scorer.pt")
    else:
        (directory / "scorer.pt").write_bytes(scorer)
    meta = json.loads((SHIPPED / "policy.json").read_text()) if policy_json is None else policy_json
    (directory / "policy.json").write_text(json.dumps(meta))
    return directory


def _register_dir(client: APIClient, directory: Path | str, version: str = "t") -> Any:
    return client.post(
        "/api/v1/policies",
        {"name": "ppo", "version": version, "artifact_dir": str(directory)},
        format="json",
    )


def _refused(response: Any, needle: str) -> None:
    assert response.status_code == 400, response.content
    problems = " ".join(response.json()["errors"]["artifact_dir"])
    assert needle in problems, problems
    assert not PolicyVersion.objects.filter(name="ppo").exists()


def test_a_trained_artifact_inside_the_root_registers_with_its_digest(
    admins: Admins, root: Path
) -> None:
    directory = _artifact(root / "training-runs" / "7")
    response = _register_dir(admins.alice, directory)
    assert response.status_code == 201, response.content
    body = response.json()
    digest = hashlib.sha256((directory / "scorer.pt").read_bytes()).hexdigest()
    assert body["artifact_sha256"] == digest
    assert body["metadata"]["feature_version"] == 1
    policy = PolicyVersion.objects.get(pk=body["id"])
    assert policy.artifact_dir == str(directory.resolve()) and policy.artifact_sha256 == digest


def test_the_shipped_scorer_registers(admins: Admins, root: Path) -> None:
    response = _register_dir(admins.alice, SHIPPED)
    assert response.status_code == 201, response.content


def test_a_directory_outside_the_roots_is_refused(
    admins: Admins, root: Path, tmp_path: Path
) -> None:
    outside = _artifact(tmp_path / "elsewhere")
    _refused(_register_dir(admins.alice, outside), "Choose a directory inside")
    _refused(_register_dir(admins.alice, root / ".." / "elsewhere"), "Choose a directory inside")
    (root / "link").symlink_to(outside)
    _refused(_register_dir(admins.alice, root / "link"), "Choose a directory inside")
    _refused(_register_dir(admins.alice, root), "Choose a directory inside")
    _refused(_register_dir(admins.alice, "/etc"), "Choose a directory inside")
    _refused(_register_dir(admins.alice, root / "missing"), "No directory")


@pytest.mark.parametrize(
    ("policy_json", "needle"),
    [
        ({"secret": "leak"}, "missing feature_names"),
        ([1, 2, 3], "not a JSON object"),
        ("text", "not a JSON object"),
    ],
)
def test_a_policy_json_not_written_by_train_is_refused(
    admins: Admins, root: Path, policy_json: Any, needle: str
) -> None:
    directory = _artifact(root / "junk", policy_json=policy_json, scorer=b"junk")
    _refused(_register_dir(admins.alice, directory), needle)


def test_a_scorer_for_another_feature_version_is_refused(admins: Admins, root: Path) -> None:
    meta = json.loads((SHIPPED / "policy.json").read_text())
    meta["feature_version"] = 99
    directory = _artifact(root / "old", policy_json=meta)
    _refused(_register_dir(admins.alice, directory), "feature_version 99")


def test_a_bad_decision_cost_weight_is_refused(admins: Admins, root: Path) -> None:
    meta = json.loads((SHIPPED / "policy.json").read_text())
    meta["decision_cost_weight"] = -1
    directory = _artifact(root / "negative", policy_json=meta)
    _refused(_register_dir(admins.alice, directory), "decision_cost_weight must be within")


def test_a_decision_cost_weight_changed_after_registration_is_not_evaluated(
    admins: Admins, root: Path
) -> None:
    """The weight changes decisions as much as the scorer does, so the digest covers it."""
    directory = _artifact(root / "repriced")
    pk = _register_dir(admins.alice, directory).json()["id"]
    meta = json.loads((directory / "policy.json").read_text())
    (directory / "policy.json").write_text(json.dumps(meta | {"decision_cost_weight": 3.0}))
    evaluation = admins.alice.post(f"/api/v1/policies/{pk}/evaluate", {}, format="json")
    assert evaluation.status_code == 409 and "decision_cost_weight" in evaluation.json()["message"]


def test_a_scorer_that_does_not_load_is_refused(admins: Admins, root: Path) -> None:
    directory = _artifact(root / "broken", scorer=b"not a torchscript file")
    _refused(_register_dir(admins.alice, directory), "cannot load")


def test_a_scorer_changed_after_registration_is_not_evaluated_nor_served(
    admins: Admins, root: Path
) -> None:
    directory = _artifact(root / "swapped")
    pk = _register_dir(admins.alice, directory).json()["id"]
    (directory / "scorer.pt").write_bytes(b"something else")
    evaluation = admins.alice.post(f"/api/v1/policies/{pk}/evaluate", {}, format="json")
    assert evaluation.status_code == 409 and "changed" in evaluation.json()["message"]
    assert not PolicyEvaluation.objects.filter(version_id=pk).exists()
    PolicyVersion.objects.filter(pk=pk).update(state="approved")  # as if approved before
    for verb in ("shadow", "canary", "promote"):
        response = _act(admins.alice, pk, verb)
        assert response.status_code == 409 and "changed" in response.json()["message"], verb
    assert PolicyVersion.objects.get(pk=pk).state == "approved"
    assert _act(admins.alice, pk, "rollback").status_code == 200  # taking it out still works


# -- 5. strict canary shares -------------------------------------------------------------------


@pytest.mark.parametrize("share", ["0.3", True, "NaN", None, 0, 1.5])
def test_a_canary_share_must_be_a_number_in_range(admins: Admins, share: Any) -> None:
    pk = _approved(admins)
    response = _act(admins.alice, pk, "canary", canary_share=share)
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["canary_share"]
    assert PolicyVersion.objects.get(pk=pk).state == "approved"


def test_the_chosen_canary_share_is_audited(admins: Admins) -> None:
    pk = _approved(admins)
    response = _act(admins.alice, pk, "canary", canary_share=0.3, reason="30% for a day")
    assert response.status_code == 200 and response.json()["canary_share"] == 0.3
    last = PolicyTransition.objects.filter(version_id=pk).first()
    assert last is not None and last.to_state == "canary" and last.canary_share == 0.3
    listed = admins.alice.get("/api/v1/policy-transitions", {"version": pk}).json()["results"]
    assert listed[0]["canary_share"] == 0.3 and listed[0]["reason"] == "30% for a day"
    # A canary without an explicit share records the one it serves.
    other = _approved(admins, "kv-aware")
    _act(admins.alice, pk, "rollback")
    assert _act(admins.alice, other, "canary").status_code == 200
    last = PolicyTransition.objects.filter(version_id=other).first()
    assert last is not None and last.canary_share == 0.1


def test_a_share_on_another_action_is_refused(admins: Admins) -> None:
    pk = _approved(admins)
    response = _act(admins.alice, pk, "shadow", canary_share=0.3)
    assert response.status_code == 400 and response.json()["errors"]["canary_share"]
    assert PolicyVersion.objects.get(pk=pk).state == "approved"


# -- 6. wrong method -> 405 --------------------------------------------------------------------


def test_a_method_the_route_does_not_offer_answers_405(admins: Admins, client_for: Any) -> None:
    key, _ = _key_client("ops")
    pk = _register(admins.alice)["id"]
    for client in (key, client_for("viewer"), client_for("service")):
        for method, url in (
            ("get", f"/api/v1/policies/{pk}/promote"),
            ("delete", f"/api/v1/policies/{pk}"),
            ("put", f"/api/v1/policies/{pk}"),
            ("post", "/api/v1/policy-transitions"),
            ("delete", "/api/v1/rollout"),
        ):
            response = getattr(client, method)(url, {}, format="json")
            assert response.status_code == 405, (method, url, response.content)
            assert "not allowed" in response.json()["message"]
    assert PolicyVersion.objects.filter(pk=pk).exists()
    anonymous = APIClient().get(f"/api/v1/policies/{pk}/promote")
    assert anonymous.status_code == 401
    viewer = client_for("viewer").post(
        f"/api/v1/policies/{pk}/promote", {"reason": "x"}, format="json"
    )
    assert viewer.status_code == 403
