"""The cost-first scorer: lowest estimated dollar cost of the request.

One scorer per file, as the GIE EPP lays out its scorer plugins
(pkg/epp/scheduling/framework/plugins/scorer); the per-node original is in
`optimizer.reference.policies`, the oracle of the parity tests."""

from __future__ import annotations

import numpy as np

from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates

# Tie-breaking weight: small enough never to override the primary criterion's whole units.
_TIE = 1e-6


class CostFirstPolicy(Policy):
    """Lowest estimated dollar cost of this request (docs/contracts.md §1 charging: prorated node
    time plus egress), the cost-minimising placement of cost-aware schedulers; ties go to the
    faster node."""

    name = "cost-first"

    def score(self, c: Candidates) -> np.ndarray:
        est = c.est
        return -(est.cost_usd + _TIE * est.ttft_s * 1e-3)
