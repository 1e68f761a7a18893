"""The weighted-score scorer: Locus's two-stage weighted cost, on the request's own budget.

One scorer per file, as the GIE EPP lays out its scorer plugins
(pkg/epp/scheduling/framework/plugins/scorer); the per-node original is in
`optimizer.reference.policies`, the oracle of the parity tests."""

from __future__ import annotations

import numpy as np

from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import D_QUEUE, D_RUNNING, S_MAX_BATCH


class WeightedScorePolicy(Policy):
    """Locus's two-stage engine: hard constraints filter first (done by the caller), then the
    lowest weighted cost wins, with each term on the scale of the request's own budget:

    - latency: estimated TTFT / TTFT target + estimated E2E / E2E target, plus a penalty of
      `MISS_PENALTY` per target the estimate already misses (a miss is a step, not a slope);
    - money: estimated cost per 1k requests / the SLO's `max_usd_per_1k` (else
      `REFERENCE_USD_PER_1K`);
    - load: (waiting + decoding) / batch limit, which keeps headroom for bursts.
    Estimates are `optimizer.estimates`, the ones the learned scorer's features carry.
    """

    name = "weighted-score"
    LATENCY_WEIGHT = 1.0
    MONEY_WEIGHT = 0.3
    LOAD_WEIGHT = 0.2
    MISS_PENALTY = 2.0
    REFERENCE_USD_PER_1K = 1.0

    def score(self, c: Candidates) -> np.ndarray:
        est = c.est
        ttft_target, e2e_target = c.targets
        ttft_ratio = est.ttft_s / ttft_target
        e2e_ratio = est.e2e_s / e2e_target
        latency = (
            ttft_ratio
            + e2e_ratio
            + self.MISS_PENALTY * ((ttft_ratio > 1.0).astype(np.float64) + (e2e_ratio > 1.0))
        )
        request = c.request
        slo = c.fleet.topology.slo_by_name.get(request.slo) if request.slo is not None else None
        budget = (
            slo.max_usd_per_1k
            if slo is not None and slo.max_usd_per_1k
            else self.REFERENCE_USD_PER_1K
        )
        money = est.cost_usd * 1000.0 / budget
        load = (c.dynamic[:, D_QUEUE] + c.dynamic[:, D_RUNNING]) / c.static[:, S_MAX_BATCH]
        return -(
            self.LATENCY_WEIGHT * latency + self.MONEY_WEIGHT * money + self.LOAD_WEIGHT * load
        )
