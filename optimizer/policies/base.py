"""What every placement policy is: a scorer over the candidates that passed the hard constraints."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from optimizer.decision import NodeView, PlacementRequest
from optimizer.topology import Topology


class Policy(ABC):
    """Scores candidates; higher is better.

    `scores` is called only with candidates that passed `constraints.filter_candidates` (at
    least one), so a policy never sees, and can never pick, a node that breaks a hard
    constraint. The caller picks the argmax (ties go to the earlier candidate) and orders
    fallbacks by descending score. Stateful heuristics keep their state on the object, so a
    caller must use one object per independent decision stream.
    """

    name: str = ""

    @abstractmethod
    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        """One float score per candidate, in candidate order."""

    def choose(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> int:
        """Index of the chosen candidate: the first of the highest scores."""
        return int(np.argmax(self.scores(request, candidates, topology)))


def ordered(scores: np.ndarray) -> list[int]:
    """Candidate indices by descending score, ties kept in candidate order (pick + fallbacks)."""
    return [int(i) for i in np.argsort(-scores, kind="stable")]
