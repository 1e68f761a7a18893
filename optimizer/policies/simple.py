"""Load-blind and single-criterion baselines: random, round-robin, least-loaded, latency-first,
cost-first and data-gravity (per-node originals: `optimizer.reference.policies`)."""

from __future__ import annotations

import numpy as np

from optimizer.kernel.candidates import Candidates
from optimizer.kernel.fleet import D_QUEUE, D_RUNNING
from optimizer.policies.base import Policy
from optimizer.topology import Topology

# Tie-breaking weight: small enough never to override the primary criterion's whole units.
_TIE = 1e-6


class RandomPolicy(Policy):
    """Uniform random choice among the candidates (the classic load-balancer baseline), drawn
    from the policy's own seeded generator so a run is reproducible."""

    name = "random"

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def score(self, c: Candidates) -> np.ndarray:
        return self._rng.random(len(c))


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


class LeastLoadedPolicy(Policy):
    """Fewest outstanding requests (waiting plus decoding), Envoy's least-request balancing and
    the queue-length routing of SGLang's router when load is imbalanced; ties go to the
    shorter waiting queue."""

    name = "least-loaded"

    def score(self, c: Candidates) -> np.ndarray:
        queue = c.dynamic[:, D_QUEUE]
        return -(queue + c.dynamic[:, D_RUNNING] + _TIE * queue)


class LatencyFirstPolicy(Policy):
    """Lowest estimated time to first token (RTT + transfer + queue wait + uncached prefill,
    `optimizer.estimates`): greedy latency minimisation, whatever it costs."""

    name = "latency-first"

    def score(self, c: Candidates) -> np.ndarray:
        est = c.est
        return -(est.ttft_s + _TIE * est.e2e_s)


class CostFirstPolicy(Policy):
    """Lowest estimated dollar cost of this request (docs/contracts.md §1 charging: prorated node
    time plus egress), the cost-minimising placement of cost-aware schedulers; ties go to the
    faster node."""

    name = "cost-first"

    def score(self, c: Candidates) -> np.ndarray:
        est = c.est
        return -(est.cost_usd + _TIE * est.ttft_s * 1e-3)


class DataGravityPolicy(Policy):
    """Compute moves to the data (McCrory's "data gravity"): the node nearest the request's
    site, by RTT then prompt transfer time, so prompts travel least; ties go to the less
    loaded node."""

    name = "data-gravity"

    def score(self, c: Candidates) -> np.ndarray:
        est = c.est
        load = c.dynamic[:, D_QUEUE] + c.dynamic[:, D_RUNNING]
        return -(est.rtt_s + est.transfer_s + _TIE * 1e-3 * load)
