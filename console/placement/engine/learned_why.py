"""Which learned decisions keep an attribution in their receipt (issue #28, "a learned decision
explained"): every one asked to `explain`, and one in `every` of the others.

The attribution (`optimizer.decide.explain_learned.pick_attribution`: integrated gradients on
the scorer's numpy twin) costs far more than the decision's scoring, so it is sampled rather
than made on every decision (docs/dashboard.md "Why a learned scorer picked a node"); the
receipt's estimates against the runner-up's are read for every receipt instead.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from optimizer.decide.explain_learned import pick_attribution
from optimizer.decide.scorers.base import Policy
from optimizer.decide.scorers.learned import TrainedPolicy
from optimizer.decide.state.candidates import Candidates


class LearnedExplainer:
    """Counts learned decisions and attributes the sampled ones (thread-safe)."""

    def __init__(self, every: int) -> None:
        """`every`: one learned decision in `every` is attributed; 0, only those asked."""
        self.every = every
        self._seen = 0
        self._lock = threading.Lock()

    def _sampled(self) -> bool:
        if self.every <= 0:
            return False
        with self._lock:
            self._seen += 1
            if self._seen >= self.every:
                self._seen = 0
                return True
        return False

    def attribution(
        self,
        policy: Policy,
        candidates: Candidates,
        scores: np.ndarray,
        order: list[int],
        *,
        asked: bool,
    ) -> dict[str, Any] | None:
        """The pick's attribution when `policy` is a trained scorer and this decision was
        asked to explain or is sampled; else None."""
        if not isinstance(policy, TrainedPolicy) or len(order) < 2:
            return None
        if not (asked or self._sampled()):
            return None
        return pick_attribution(policy, candidates, scores, order)
