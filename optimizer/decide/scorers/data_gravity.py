"""The data-gravity scorer: the node nearest the request's site.

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


class DataGravityPolicy(Policy):
    """Compute moves to the data (McCrory's "data gravity"): the node nearest the request's
    site, by RTT then prompt transfer time, so prompts travel least; ties go to the less
    loaded node."""

    name = "data-gravity"

    def score(self, c: Candidates) -> np.ndarray:
        est = c.est
        load = c.dynamic[:, D_QUEUE] + c.dynamic[:, D_RUNNING]
        return -(est.rtt_s + est.transfer_s + _TIE * 1e-3 * load)
