"""The random scorer: a uniform draw per candidate, the classic load-balancer baseline.

One scorer per file, as the GIE EPP lays out its scorer plugins
(pkg/epp/scheduling/framework/plugins/scorer); the per-node original is in
`optimizer.reference.policies`, the oracle of the parity tests."""

from __future__ import annotations

import numpy as np

from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates


class RandomPolicy(Policy):
    """Uniform random choice among the candidates (the classic load-balancer baseline), drawn
    from the policy's own seeded generator so a run is reproducible."""

    name = "random"

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def score(self, c: Candidates) -> np.ndarray:
        return self._rng.random(len(c))
