"""Reads of policy state."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from console.policies.choices import PolicyState
from console.policies.models import PolicyTransition, PolicyVersion
from optimizer.decide.state.snapshot import PolicyRef, Rollout


def _ref(version: PolicyVersion) -> PolicyRef:
    return PolicyRef(
        name=version.name,
        version=version.version,
        spec=version.spec,
        version_id=version.pk,
        sha256=version.artifact_sha256 or "",
    )


def rollout_state(*, default: PolicyRef) -> Rollout:
    """Which policies serve live traffic now (the engine's snapshot reads this)."""
    live = {
        v.state: v
        for v in PolicyVersion.objects.filter(
            state__in=(PolicyState.ACTIVE, PolicyState.SHADOW, PolicyState.CANARY)
        )
    }
    active = live.get(PolicyState.ACTIVE)
    canary = live.get(PolicyState.CANARY)
    shadow = live.get(PolicyState.SHADOW)
    return Rollout(
        active=_ref(active) if active else default,
        shadow=_ref(shadow) if shadow else None,
        canary=_ref(canary) if canary else None,
        canary_share=canary.canary_share if canary else 0.0,
    )


def active_policy_label() -> str:
    from django.conf import settings

    active = PolicyVersion.objects.filter(state=PolicyState.ACTIVE).first()
    return str(active) if active else f"{settings.LOCUS_DEFAULT_POLICY}@builtin"


def active_policy_spec() -> str:
    from django.conf import settings

    active = PolicyVersion.objects.filter(state=PolicyState.ACTIVE).first()
    return active.spec if active else settings.LOCUS_DEFAULT_POLICY


# Rollout moves worth a marker on the fleet's charts (docs/dashboard.md): the ones that change
# which policy serves or is watched. The retirement a promotion causes and the restore a
# rollback causes are parts of those moves, not moves of their own.
MARK_LIMIT = 500


def rollout_marks(*, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """Shadow, canary, promote and rollback moves in [start, end), oldest first."""
    moves = (
        PolicyTransition.objects.filter(at__gte=start, at__lt=end)
        .select_related("version")
        .order_by("at", "id")[:MARK_LIMIT]
    )
    marks = []
    for move in moves:
        kind = _mark_kind(move)
        if kind:
            marks.append(
                {
                    "t": move.at.timestamp(),
                    "kind": kind,
                    "policy": f"{move.version.name}@{move.version.version}",
                    "actor": move.actor,
                    "reason": move.reason,
                }
            )
    return marks


def _mark_kind(move: PolicyTransition) -> str:
    if move.to_state in (PolicyState.SHADOW, PolicyState.CANARY):
        return str(move.to_state)
    if move.to_state == PolicyState.ACTIVE:
        return "" if move.from_state == PolicyState.RETIRED else "promote"
    if move.to_state == PolicyState.RETIRED:
        return "" if move.reason.startswith("replaced by ") else "rollback"
    return ""
