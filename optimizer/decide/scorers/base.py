"""What every placement policy is: a scorer over the candidates that passed the hard constraints."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.candidates import Candidates, candidates_of_views
from optimizer.decision import NodeView
from optimizer.topology import Topology


class Policy(ABC):
    """Scores candidates; higher is better.

    `score` is called only with candidates that passed the hard constraints (at least one), as
    columns (`optimizer.decide.state.candidates.Candidates`), so a policy never sees, and can never
    pick, a node that breaks one. The caller picks the argmax (ties go to the earlier candidate)
    and orders fallbacks by descending score. Stateful heuristics keep their state on the object,
    so a caller must use one object per independent decision stream.
    """

    name: str = ""

    @abstractmethod
    def score(self, c: Candidates) -> np.ndarray:
        """One float score per candidate, in candidate order."""

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        """`score` on node views (hand-built states in tests and tools; the decision paths
        hold columns already)."""
        return self.score(candidates_of_views(request, candidates, topology))

    def choose(self, c: Candidates) -> int:
        """Index of the chosen candidate: the first of the highest scores."""
        return int(np.argmax(self.score(c)))


def ordered(scores: np.ndarray) -> list[int]:
    """Candidate indices by descending score, ties kept in candidate order (pick + fallbacks)."""
    return [int(i) for i in np.argsort(-scores, kind="stable")]
