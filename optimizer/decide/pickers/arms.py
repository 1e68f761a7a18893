"""Rollout arms: which policy scores a decision, the active one or the canary (docs/rollouts.md).

Sticky per session (`pickers.sticky`): the same session always lands on one arm, so a user's
conversation is never scored by two policies in turn, and a canary's share is a share of
sessions. Picks the scorer before the pipeline runs, as the GIE EPP's profile handler picks
the scheduler profile of a request.
"""

from __future__ import annotations

from optimizer.decide.pickers.sticky import within
from optimizer.decide.state.snapshot import PolicyRef, Rollout


def arm(rollout: Rollout, sticky_key: str) -> tuple[PolicyRef, str]:
    """(the policy, "canary" or "active") for a decision keyed by `sticky_key`."""
    canary = rollout.canary
    if canary is not None and rollout.canary_share > 0 and within(sticky_key, rollout.canary_share):
        return canary, "canary"
    return rollout.active, "active"
