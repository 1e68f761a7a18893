"""The latency-first scorer: lowest estimated time to first token, whatever it costs.

One scorer per file, as the GIE EPP lays out its scorer plugins
(pkg/epp/scheduling/framework/plugins/scorer); the per-node original is in
`optimizer.reference.policies`, the oracle of the parity tests."""

from __future__ import annotations

import numpy as np

from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates

# Tie-breaking weight: small enough never to override the primary criterion's whole units.
_TIE = 1e-6


class LatencyFirstPolicy(Policy):
    """Lowest estimated time to first token (RTT + transfer + queue wait + uncached prefill,
    `optimizer.estimates`): greedy latency minimisation, whatever it costs."""

    name = "latency-first"

    def score(self, c: Candidates) -> np.ndarray:
        est = c.est
        return -(est.ttft_s + _TIE * est.e2e_s)
