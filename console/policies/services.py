"""Policy versions: registration, the rollout state machine, shadow statistics.

candidate ──approve──▶ approved ──shadow──▶ shadow ──canary──▶ canary ──promote──▶ active
(approved may go straight to canary; approved and shadow straight to active by promote)
any state but retired ──rollback──▶ retired

- Every caller has an identity (`console.access.identity`): a user, an API key (`key:NAME`),
  or the system for automatic actions. Registrations and transitions record it.
- Every human transition carries a non-blank reason; only the system acts without one.
- Four eyes by person (docs/operations.md "Four eyes"): behind every identity stands at
  most one person (a user, or an API key's owner). Approval needs a succeeded evaluation and
  a person other than the registrant's: a user's own keys count as that user. A version
  registered by nobody's person (the system: shipped and trained versions, or a key without
  a person) needs two distinct people for approve and canary/promote.
- An identity without a person (a CLI key made without --owner) may register, evaluate and
  roll back, but not approve, shadow, canary or promote: every step towards traffic has a
  person who answers for it.
- Shadow, canary and active each hold at most one version (also enforced by the database).
- Promote is refused while another version's canary runs (finish or roll it back first).
  Promoting straight from approved or shadow is an explicit admin choice: allowed, audited
  with its from-state and reason like any transition.
- Promoting retires the previously active version. Rolling back the active version restores
  the most recently retired version that was active before it, if any, else the engine's
  configured default heuristic serves.
- A trained version may only come from an allowed artifact root, with a policy.json written
  by `train` for this build's features and a scorer.pt that loads; its SHA-256 is recorded,
  and a version whose scorer.pt changed since is refused evaluation and service.
- Every transition is audited (who, when, why) and sent on the live stream.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from console.access.identity import SYSTEM, SYSTEM_NAME, Identity
from console.api.errors import ApplicationError
from console.live.events import send_event
from console.policies.artifacts import artifact_directory, artifact_problem, read_artifact
from console.policies.choices import PolicyKind, PolicyState
from console.policies.four_eyes import check_people
from console.policies.models import (
    PolicyTransition,
    PolicyVersion,
    ShadowComparison,
)
from optimizer.decide.registry import POLICY_NAMES

SYSTEM_ACTOR = SYSTEM_NAME  # the audit trail's actor for automatic actions
# States that put a version in front of live traffic (the artifact must be intact).
SERVING_STATES = frozenset({PolicyState.SHADOW, PolicyState.CANARY, PolicyState.ACTIVE})

# action -> (states it may start from, state it leads to)
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "approve": (frozenset({PolicyState.CANDIDATE}), PolicyState.APPROVED),
    "shadow": (frozenset({PolicyState.APPROVED}), PolicyState.SHADOW),
    "canary": (frozenset({PolicyState.APPROVED, PolicyState.SHADOW}), PolicyState.CANARY),
    # From approved or shadow this skips the canary: an explicit admin choice, audited.
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


def policy_register(
    *,
    name: str,
    version: str,
    heuristic: str = "",
    artifact_dir: str = "",
    registered_by: Identity | None = None,
) -> PolicyVersion:
    """Register a built-in heuristic or a directory written by `optimizer train`.

    `registered_by` None means the system (first start, the demo seed)."""
    who = registered_by or SYSTEM
    if bool(heuristic) == bool(artifact_dir):
        raise ApplicationError(
            "Give either a heuristic or an artifact directory.",
            errors={"artifact_dir": ["Exactly one of heuristic and artifact_dir is required."]},
        )
    metadata: dict[str, Any] = {}
    digest = ""
    directory = ""
    if heuristic:
        if heuristic not in POLICY_NAMES:
            raise ApplicationError(
                f"Unknown heuristic {heuristic!r}.",
                errors={"heuristic": [f"Choose one of {', '.join(POLICY_NAMES)}."]},
            )
        kind = PolicyKind.HEURISTIC
    else:
        kind = PolicyKind.LEARNED
        resolved = artifact_directory(artifact_dir)
        metadata, digest = read_artifact(resolved)
        directory = str(resolved)
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
        artifact_dir=directory,
        artifact_sha256=digest,
        metadata=metadata,
        registered_by_id=who.user_id,
        registered_by_key_id=who.key_id,
        registered_by_name="" if who.is_system else who.name,
        registered_by_person_id=who.person_id,
        state_changed_at=timezone.now(),
    )
    _audit(policy, "", PolicyState.CANDIDATE, who.name, "registered")
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
    _move(policy, PolicyState.ACTIVE, SYSTEM_ACTOR, "bootstrap: the console had no active policy")
    return policy


@transaction.atomic
def policy_transition(
    *,
    policy: PolicyVersion,
    action: str,
    actor: Identity | None,
    reason: str = "",
    canary_share: float | None = None,
) -> PolicyVersion:
    """Move a version through the rollout (see the module docstring for the rules).

    `actor` None means the system (the canary watchdog); people and keys pass their
    identity and a reason."""
    who = actor or SYSTEM
    if action not in TRANSITIONS:
        raise ApplicationError(f"Unknown action {action!r}.")
    reason = reason.strip()
    if not who.is_system and not reason:
        raise ApplicationError(
            "Every rollout action needs a reason.",
            errors={"reason": ["Say why; it is kept in the audit trail."]},
        )
    if canary_share is not None and action != "canary":
        raise ApplicationError(
            "Only canary takes a canary share.",
            errors={"canary_share": ["Only for canary."]},
        )
    policy = PolicyVersion.objects.select_for_update().get(pk=policy.pk)
    sources, target = TRANSITIONS[action]
    if policy.state not in sources:
        raise ApplicationError(f"Cannot {action} {policy}: it is {policy.state}.", status_code=409)
    check_people(policy, action, who)
    if target in SERVING_STATES and (problem := artifact_problem(policy)) is not None:
        raise ApplicationError(problem, status_code=409)
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
    if action == "promote":
        running = (
            PolicyVersion.objects.filter(state=PolicyState.CANARY).exclude(pk=policy.pk).first()
        )
        if running is not None:
            raise ApplicationError(
                f"{running} is in canary; promote or roll it back before promoting {policy}.",
                status_code=409,
            )
    restored = None
    if action == "promote":
        for previous in PolicyVersion.objects.select_for_update().filter(state=PolicyState.ACTIVE):
            _move(previous, PolicyState.RETIRED, who.name, f"replaced by {policy}")
    if action == "rollback" and policy.state == PolicyState.ACTIVE:
        restored = _previous_active(policy)
    if action == "approve":
        policy.approved_by_id = who.user_id
        policy.approved_by_key_id = who.key_id
        policy.approved_by_name = who.name
        policy.approved_by_person_id = who.person_id
        policy.approved_at = timezone.now()
    share = policy.canary_share if target == PolicyState.CANARY else None
    _move(policy, target, who.name, reason, canary_share=share)
    if restored is not None:
        _move(restored, PolicyState.ACTIVE, who.name, f"restored by rollback of {policy}")
    return policy


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


def _move(
    policy: PolicyVersion,
    target: str,
    actor: str,
    reason: str,
    *,
    canary_share: float | None = None,
) -> None:
    before = policy.state
    policy.state = target
    policy.state_changed_at = timezone.now()
    policy.save()
    _audit(policy, before, target, actor, reason, canary_share=canary_share)


def _audit(
    policy: PolicyVersion,
    before: str,
    after: str,
    actor: str,
    reason: str,
    *,
    canary_share: float | None = None,
) -> None:
    transition = PolicyTransition.objects.create(
        version=policy,
        from_state=before,
        to_state=after,
        actor=actor,
        reason=reason[:1000],
        canary_share=canary_share,
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
            "canary_share": canary_share,
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
