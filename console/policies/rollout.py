"""The policies' side of `console.placement.rollout.RolloutStore`: the rollout placement serves,
read and written through this app's selectors and services (connected in
`PoliciesConfig.ready`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from console.placement.rollout import RolloutStore
from console.policies.selectors import rollout_marks, rollout_state
from console.policies.services import shadow_comparison_add
from optimizer.decide.state.snapshot import PolicyRef, Rollout


class PolicyRollout(RolloutStore):
    """The policy versions' states, transitions and shadow totals, as placement needs them."""

    def state(self, *, default: PolicyRef) -> Rollout:
        return rollout_state(default=default)

    def marks(self, *, start: datetime, end: datetime) -> list[dict[str, Any]]:
        return rollout_marks(start=start, end=end)

    def add_shadow_comparison(
        self,
        *,
        version_id: int,
        compared: int,
        agreed: int,
        ttft_delta_ms: float,
        cost_delta_usd: float,
    ) -> None:
        shadow_comparison_add(
            version_id=version_id,
            compared=compared,
            agreed=agreed,
            ttft_delta_ms=ttft_delta_ms,
            cost_delta_usd=cost_delta_usd,
        )
