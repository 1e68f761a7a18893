"""The least-loaded scorer: fewest outstanding requests (Envoy least-request).

One scorer per file, as the GIE EPP lays out its scorer plugins
(pkg/epp/scheduling/framework/plugins/scorer); the per-node original is in
`optimizer.reference.policies`, the oracle of the parity tests."""

from __future__ import annotations

import numpy as np

from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import D_QUEUE, D_RUNNING

# Tie-breaking weight: small enough never to override the primary criterion's whole units.
_TIE = 1e-6


class LeastLoadedPolicy(Policy):
    """Fewest outstanding requests (waiting plus decoding), Envoy's least-request balancing and
    the queue-length routing of SGLang's router when load is imbalanced; ties go to the
    shorter waiting queue."""

    name = "least-loaded"

    def score(self, c: Candidates) -> np.ndarray:
        queue = c.dynamic[:, D_QUEUE]
        return -(queue + c.dynamic[:, D_RUNNING] + _TIE * queue)
