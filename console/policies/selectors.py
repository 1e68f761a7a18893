"""Reads of policy state."""

from __future__ import annotations

from console.placement.engine.snapshot import PolicyRef, Rollout
from console.policies.choices import PolicyState
from console.policies.models import PolicyVersion


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
