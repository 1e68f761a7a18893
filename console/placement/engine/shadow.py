"""Shadow scoring: what the shadow version would have picked on the same candidates, beside
the serving policy's pick (docs/rollouts.md, "Shadow")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optimizer.decide.pipeline import Pipeline
from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.snapshot import PolicyRef, Snapshot


def shadow_comparison(
    pipeline: Pipeline,
    load_policy: Callable[[PolicyRef, Snapshot], Policy],
    snap: Snapshot,
    candidates: Candidates,
    pick: int,
) -> dict[str, Any] | None:
    """The shadow version's pick against `pick` (the serving policy's, a candidate
    position): agreement and the estimated TTFT and cost differences; None when the shadow
    version failed to score."""
    ref = snap.rollout.shadow
    assert ref is not None
    try:
        _, (other,) = pipeline.rank(candidates, load_policy(ref, snap), 1)
    except Exception:
        return None
    est = candidates.est
    return {
        "policy": ref.key,
        "version_id": ref.version_id,
        "node": candidates.names[other],
        "agreed": other == pick,
        "ttft_delta_ms": float(est.ttft_s[other] - est.ttft_s[pick]) * 1000,
        "cost_delta_usd": float(est.cost_usd[other] - est.cost_usd[pick]),
    }
