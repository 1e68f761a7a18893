"""Policy versions: registration, the rollout state machine, shadow statistics.

candidate ──approve──▶ approved ──shadow──▶ shadow ──canary──▶ canary ──promote──▶ active
     └──────────────── rollback (any time) ──────────────▶ retired

- Approval needs a succeeded evaluation and an admin other than the one who registered the
  version (four eyes).
- Shadow, canary and active each hold at most one version (also enforced by the database).
- Promoting retires the previously active version. Rolling back the active version restores
  the most recently retired version that was active before it, if any, else the engine's
  configured default heuristic serves.
- Every transition is audited (who, when, why) and sent on the live stream.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from console.api.errors import ApplicationError
from console.live.events import send_event
from console.policies.choices import JobStatus, PolicyKind, PolicyState
from console.policies.models import (
    PolicyEvaluation,
    PolicyTransition,
    PolicyVersion,
    ShadowComparison,
)
from optimizer.policies import POLICY_NAMES

SYSTEM = "system"

# action -> (states it may start from, state it leads to)
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "approve": (frozenset({PolicyState.CANDIDATE}), PolicyState.APPROVED),
    "shadow": (frozenset({PolicyState.APPROVED}), PolicyState.SHADOW),
    "canary": (frozenset({PolicyState.APPROVED, PolicyState.SHADOW}), PolicyState.CANARY),
    "promote": (
        frozenset({PolicyState.APPROVED, PolicyState.SHADOW, PolicyState.CANARY}),
        PolicyState.ACTIVE,
    ),
    "rollback": (
        frozenset(
            {
                PolicyState.CANDIDATE,
                PolicyState.APPROVED,
                PolicyState.SHADOW,
                PolicyState.CANARY,
                PolicyState.ACTIVE,
            }
        ),
        PolicyState.RETIRED,
    ),
}


def _actor_name(actor: User | None) -> str:
    return actor.get_username() if actor is not None else SYSTEM


def policy_register(
    *,
    name: str,
    version: str,
    heuristic: str = "",
    artifact_dir: str = "",
    registered_by: User | None = None,
) -> PolicyVersion:
    """Register a built-in heuristic or a directory written by `optimizer train`."""
    if bool(heuristic) == bool(artifact_dir):
        raise ApplicationError(
            "Give either a heuristic or an artifact directory.",
            errors={"artifact_dir": ["Exactly one of heuristic and artifact_dir is required."]},
        )
    metadata: dict[str, Any] = {}
    if heuristic:
        if heuristic not in POLICY_NAMES:
            raise ApplicationError(
                f"Unknown heuristic {heuristic!r}.",
                errors={"heuristic": [f"Choose one of {', '.join(POLICY_NAMES)}."]},
            )
        kind = PolicyKind.HEURISTIC
    else:
        kind = PolicyKind.LEARNED
        metadata = _read_artifact(Path(artifact_dir))
    if PolicyVersion.objects.filter(name=name, version=version).exists():
        raise ApplicationError(
            f"{name}@{version} is already registered.",
            status_code=409,
            errors={"version": ["This version exists."]},
        )
    policy = PolicyVersion.objects.create(
        name=name,
        version=version,
        kind=kind,
        heuristic=heuristic,
        artifact_dir=str(Path(artifact_dir).resolve()) if artifact_dir else "",
        metadata=metadata,
        registered_by=registered_by,
        state_changed_at=timezone.now(),
    )
    _audit(policy, "", PolicyState.CANDIDATE, _actor_name(registered_by), "registered")
    return policy


@transaction.atomic
def policy_bootstrap(*, heuristic: str) -> PolicyVersion | None:
    """Make a built-in heuristic the active version of a console that has none yet (first
    start). Audited as the system's doing; refuses nothing, changes nothing once any version
    is active, so approval rules govern every later change."""
    if PolicyVersion.objects.filter(state=PolicyState.ACTIVE).exists():
        return None
    policy = PolicyVersion.objects.filter(name=heuristic, version="builtin").first()
    if policy is None:
        policy = policy_register(name=heuristic, version="builtin", heuristic=heuristic)
    _move(policy, PolicyState.ACTIVE, SYSTEM, "bootstrap: the console had no active policy")
    return policy


def _read_artifact(directory: Path) -> dict[str, Any]:
    problems = []
    if not (directory / "scorer.pt").is_file():
        problems.append(f"no scorer.pt in {directory}")
    meta_path = directory / "policy.json"
    metadata: dict[str, Any] = {}
    if not meta_path.is_file():
        problems.append(f"no policy.json in {directory}")
    else:
        try:
            metadata = json.loads(meta_path.read_text())
        except (OSError, ValueError) as exc:
            problems.append(f"{meta_path}: unreadable: {exc}")
    if problems:
        raise ApplicationError(
            "The artifact directory is incomplete.", errors={"artifact_dir": problems}
        )
    return metadata


@transaction.atomic
def policy_transition(
    *,
    policy: PolicyVersion,
    action: str,
    actor: User | None,
    reason: str = "",
    canary_share: float | None = None,
) -> PolicyVersion:
    """Move a version through the rollout (see the module docstring for the rules)."""
    if action not in TRANSITIONS:
        raise ApplicationError(f"Unknown action {action!r}.")
    policy = PolicyVersion.objects.select_for_update().get(pk=policy.pk)
    sources, target = TRANSITIONS[action]
    if policy.state not in sources:
        raise ApplicationError(f"Cannot {action} {policy}: it is {policy.state}.", status_code=409)
    if action == "approve":
        _check_approvable(policy, actor)
    if action == "canary" and canary_share is not None:
        if not 0 < canary_share <= 1:
            raise ApplicationError(
                "The canary share must be in (0, 1].",
                errors={"canary_share": ["Must be in (0, 1]."]},
            )
        policy.canary_share = canary_share
    if target in (PolicyState.SHADOW, PolicyState.CANARY):
        occupant = PolicyVersion.objects.filter(state=target).exclude(pk=policy.pk).first()
        if occupant is not None:
            raise ApplicationError(
                f"{occupant} is already in {target}; roll it back or promote it first.",
                status_code=409,
            )
    restored = None
    if action == "promote":
        for previous in PolicyVersion.objects.select_for_update().filter(state=PolicyState.ACTIVE):
            _move(previous, PolicyState.RETIRED, _actor_name(actor), f"replaced by {policy}")
    if action == "rollback" and policy.state == PolicyState.ACTIVE:
        restored = _previous_active(policy)
    if action == "approve":
        policy.approved_by = actor
        policy.approved_at = timezone.now()
    _move(policy, target, _actor_name(actor), reason)
    if restored is not None:
        _move(restored, PolicyState.ACTIVE, _actor_name(actor), f"restored by rollback of {policy}")
    return policy


def _check_approvable(policy: PolicyVersion, actor: User | None) -> None:
    if actor is None:
        raise ApplicationError("Approval needs an admin.", status_code=403)
    if policy.registered_by_id is not None and policy.registered_by_id == actor.pk:
        raise ApplicationError(
            "Four-eyes rule: a version must be approved by an admin who did not register it.",
            status_code=403,
        )
    if not policy.evaluations.filter(status=JobStatus.SUCCEEDED).exists():
        raise ApplicationError(
            f"{policy} has no succeeded evaluation; evaluate it before approving.", status_code=409
        )


def _previous_active(policy: PolicyVersion) -> PolicyVersion | None:
    """The version that was active before `policy` (from the audit trail), if retired."""
    handover = (
        PolicyTransition.objects.filter(
            to_state=PolicyState.RETIRED,
            from_state=PolicyState.ACTIVE,
            reason=f"replaced by {policy}",
        )
        .select_related("version")
        .first()
    )
    if handover is None or handover.version.state != PolicyState.RETIRED:
        return None
    return PolicyVersion.objects.select_for_update().get(pk=handover.version.pk)


def _move(policy: PolicyVersion, target: str, actor: str, reason: str) -> None:
    before = policy.state
    policy.state = target
    policy.state_changed_at = timezone.now()
    policy.save()
    _audit(policy, before, target, actor, reason)


def _audit(policy: PolicyVersion, before: str, after: str, actor: str, reason: str) -> None:
    transition = PolicyTransition.objects.create(
        version=policy, from_state=before, to_state=after, actor=actor, reason=reason[:1000]
    )
    send_event(
        "policy.transition",
        {
            "version_id": policy.pk,
            "name": policy.name,
            "version": policy.version,
            "from_state": before,
            "to_state": after,
            "actor": actor,
            "reason": reason,
            "ts": transition.at.isoformat(),
        },
    )


def shadow_comparison_add(
    *, version_id: int, compared: int, agreed: int, ttft_delta_ms: float, cost_delta_usd: float
) -> None:
    """Add a batch of live shadow comparisons to the version's running totals."""
    stats, _ = ShadowComparison.objects.get_or_create(version_id=version_id)
    ShadowComparison.objects.filter(pk=stats.pk).update(
        compared=F("compared") + compared,
        agreed=F("agreed") + agreed,
        predicted_ttft_delta_ms_sum=F("predicted_ttft_delta_ms_sum") + ttft_delta_ms,
        predicted_cost_delta_usd_sum=F("predicted_cost_delta_usd_sum") + cost_delta_usd,
        updated_at=timezone.now(),
    )


def evaluation_request(
    *,
    policy: PolicyVersion,
    trace: str,
    loads: list[float],
    seeds: list[int],
    requested_by: User | None,
) -> PolicyEvaluation:
    """Queue a simulator evaluation of `policy` against the active policy and the heuristics."""
    from console.policies.selectors import active_policy_label
    from console.policies.tasks import run_evaluation

    evaluation = PolicyEvaluation.objects.create(
        version=policy,
        baseline=active_policy_label(),
        trace=trace,
        loads=loads,
        seeds=seeds,
        requested_by=requested_by,
    )
    transaction.on_commit(lambda: run_evaluation.delay(evaluation.pk))
    return evaluation
