"""What placement needs of the policy rollout, declared here and supplied by `console.policies`
when the apps load (`PoliciesConfig.ready` connects its `PolicyRollout`).

The two apps use each other: placement serves the rollout (the engine's snapshot reads which
policies serve, the runtime adds up live shadow comparisons, the fleet charts mark rollout
moves), and policies act on placement (the canary watchdog judges its decision records, a
transition refreshes this process's runtime at once). The `acyclic` contract
(pyproject.toml) allows one direction only, so placement names the three things it needs of a
rollout here, in its own terms (`optimizer.decide.state.snapshot`'s `Rollout` and
`PolicyRef`), and the app that owns the policy versions provides them: placement never
imports policies.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from optimizer.decide.state.snapshot import PolicyRef, Rollout


class RolloutStore(Protocol):
    """The rollout as placement reads and writes it."""

    def state(self, *, default: PolicyRef) -> Rollout:
        """Which policies serve live traffic now (`default` when no version is active)."""
        ...

    def marks(self, *, start: datetime, end: datetime) -> list[dict[str, Any]]:
        """The rollout moves worth a marker on the fleet's charts in [start, end)."""
        ...

    def add_shadow_comparison(
        self,
        *,
        version_id: int,
        compared: int,
        agreed: int,
        ttft_delta_ms: float,
        cost_delta_usd: float,
    ) -> None:
        """Add a batch of live shadow comparisons to a version's running totals."""
        ...


_store: RolloutStore | None = None


def connect(store: RolloutStore) -> None:
    """Make `store` the rollout placement reads (called once, when the apps load)."""
    global _store
    _store = store


def rollout_store() -> RolloutStore:
    """The connected rollout; an error naming the missing app when there is none."""
    if _store is None:
        raise RuntimeError(
            "no rollout store is connected: console.policies must be in INSTALLED_APPS "
            "(its AppConfig.ready connects one)"
        )
    return _store
