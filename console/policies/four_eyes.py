"""Four eyes by person: who may move a policy version towards live traffic.

Behind every caller stands at most one person (`Identity.person_id`: a signed-in user, or
an API key's owner). The rules (docs/operations.md "Four eyes"):
- approving needs a succeeded evaluation and a person other than the registrant's; a
  person's own keys count as that person, and so do keys made with those keys;
- a version registered by no person (the system, for shipped and trained versions, or a
  key without a person) needs two distinct people: the one who approves it may not also be
  the one who puts it in canary or promotes it;
- an identity without a person (a CLI key made without `--owner`) may register, evaluate,
  read and roll back, never approve, shadow, canary or promote.
"""

from __future__ import annotations

from console.access.identity import SYSTEM_NAME, Identity
from console.api.errors import ApplicationError
from console.policies.choices import JobStatus
from console.policies.models import PolicyVersion

# Steps that bring a version closer to live traffic: each needs a person behind the caller.
PERSON_ACTIONS = frozenset({"approve", "shadow", "canary", "promote"})


def check_people(policy: PolicyVersion, action: str, actor: Identity) -> None:
    """Who may take this step (the module docstring's four-eyes rules)."""
    if actor.is_system:
        if action == "approve":
            raise ApplicationError("Approval needs an admin.", status_code=403)
        return  # the watchdog's rollback
    if action in PERSON_ACTIONS and not actor.has_person:
        raise ApplicationError(
            f"{actor} belongs to no person, so it may not {action} a policy version; use a "
            "key owned by a person (create_api_key --owner) or sign in.",
            status_code=403,
        )
    if action == "approve":
        _check_approvable(policy, actor)
    elif action in ("canary", "promote") and _second_pair_missing(policy, actor):
        registrant = policy.registered_by_name or SYSTEM_NAME
        raise ApplicationError(
            f"Four-eyes rule: {policy} was registered by {registrant}, not by a person, and "
            f"approved by {policy.approved_by_name}; another person must {action} it.",
            status_code=403,
        )


def _second_pair_missing(policy: PolicyVersion, actor: Identity) -> bool:
    """Nobody's eyes were on the registration, so the approver's pair is the first: the
    same person may not also put the version in front of traffic."""
    return (
        policy.registered_by_person_id is None
        and actor.person_id is not None
        and actor.person_id == policy.approved_by_person_id
    )


def _check_approvable(policy: PolicyVersion, actor: Identity) -> None:
    same_user = actor.user_id is not None and policy.registered_by_id == actor.user_id
    same_key = actor.key_id is not None and policy.registered_by_key_id == actor.key_id
    # The recorded name covers a registrant whose account or key was deleted since.
    same_name = bool(policy.registered_by_name) and policy.registered_by_name == actor.name
    same_person = actor.person_id is not None and policy.registered_by_person_id == actor.person_id
    if same_user or same_key or same_name or same_person:
        raise ApplicationError(
            "Four-eyes rule: a version must be approved by a person other than the one who "
            f"registered it ({policy.registered_by_name}); their own API keys count as them.",
            status_code=403,
        )
    if not policy.evaluations.filter(status=JobStatus.SUCCEEDED).exists():
        raise ApplicationError(
            f"{policy} has no succeeded evaluation; evaluate it before approving.", status_code=409
        )
