"""The round-robin scorer: the next candidate in topology order after the last pick.

One scorer per file, as the GIE EPP lays out its scorer plugins
(pkg/epp/scheduling/framework/plugins/scorer); the per-node original is in
`optimizer.reference.policies`, the oracle of the parity tests."""

from __future__ import annotations

import numpy as np

from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.topology import Topology


class RoundRobinPolicy(Policy):
    """Round-robin over the fleet's nodes in topology order, skipping nodes that are not
    candidates (nginx/Envoy round robin over healthy upstreams). The cursor moves past the
    node picked, so each policy object is one rotation."""

    name = "round-robin"

    def __init__(self, topology: Topology) -> None:
        self._size = len(topology.nodes)
        self._cursor = 0

    def score(self, c: Candidates) -> np.ndarray:
        # Distance ahead of the cursor, cyclic: the next node in the rotation scores highest.
        # A candidate's index is its position in topology order.
        ahead = ((c.index - self._cursor) % self._size).astype(np.float64)
        self._cursor = (int(c.index[int(np.argmin(ahead))]) + 1) % self._size
        return -ahead
