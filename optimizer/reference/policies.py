"""The per-node heuristics (and the training teacher) as they were before the kernel: each
scores a list of `NodeView`s with `optimizer.estimates.estimate`. The oracle of the vectorised
policies in `optimizer.decide.scorers` and `optimizer.rl.teacher` (see the package docstring)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import numpy as np

from optimizer.decide.request import BLOCK_TOKENS, PlacementRequest, slo_targets_s
from optimizer.decision import NodeView
from optimizer.estimates import estimate
from optimizer.topology import Topology

# Tie-breaking weight: small enough never to override the primary criterion's whole units.
_TIE = 1e-6


class Policy(ABC):
    """Scores candidates that passed `constraints.filter_candidates`; higher is better."""

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


class RandomPolicy(Policy):
    """Uniform random choice among the candidates (the classic load-balancer baseline), drawn
    from the policy's own seeded generator so a run is reproducible."""

    name = "random"

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        return self._rng.random(len(candidates))


class RoundRobinPolicy(Policy):
    """Round-robin over the fleet's nodes in topology order, skipping nodes that are not
    candidates (nginx/Envoy round robin over healthy upstreams). The cursor moves past the
    node picked, so each policy object is one rotation."""

    name = "round-robin"

    def __init__(self, topology: Topology) -> None:
        self._position = {node.name: i for i, node in enumerate(topology.nodes)}
        self._size = len(topology.nodes)
        self._cursor = 0

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        # Distance ahead of the cursor, cyclic: the next node in the rotation scores highest.
        ahead = np.array(
            [(self._position[c.name] - self._cursor) % self._size for c in candidates],
            dtype=np.float64,
        )
        self._cursor = (self._position[candidates[int(np.argmin(ahead))].name] + 1) % self._size
        return -ahead


class LeastLoadedPolicy(Policy):
    """Fewest outstanding requests (waiting plus decoding), Envoy's least-request balancing and
    the queue-length routing of SGLang's router when load is imbalanced; ties go to the
    shorter waiting queue."""

    name = "least-loaded"

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        return -np.array(
            [c.queue_depth + c.running + _TIE * c.queue_depth for c in candidates],
            dtype=np.float64,
        )


class LatencyFirstPolicy(Policy):
    """Lowest estimated time to first token (RTT + transfer + queue wait + uncached prefill,
    `optimizer.estimates`): greedy latency minimisation, whatever it costs."""

    name = "latency-first"

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        est = estimate(request, candidates, topology)
        return -(est.ttft_s + _TIE * est.e2e_s)


class CostFirstPolicy(Policy):
    """Lowest estimated dollar cost of this request (docs/contracts.md §1 charging: prorated node
    time plus egress), the cost-minimising placement of cost-aware schedulers; ties go to the
    faster node."""

    name = "cost-first"

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        est = estimate(request, candidates, topology)
        return -(est.cost_usd + _TIE * est.ttft_s * 1e-3)


class DataGravityPolicy(Policy):
    """Compute moves to the data (McCrory's "data gravity"): the node nearest the request's
    site, by RTT then prompt transfer time, so prompts travel least; ties go to the less
    loaded node."""

    name = "data-gravity"

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        est = estimate(request, candidates, topology)
        load = np.array([c.queue_depth + c.running for c in candidates], dtype=np.float64)
        return -(est.rtt_s + est.transfer_s + _TIE * 1e-3 * load)


class PrefixAwarePolicy(Policy):
    """llm-d's inference scheduler with its default weighted scorers.

    Each scorer returns 0..1 and the weighted sum wins (llm-d inference-scheduler defaults,
    built on the Gateway API Inference Extension scorers):
    - queue (weight 2): waiting requests min-max normalised over the candidates,
      (max - q) / (max - min), 1 for all when every queue is equal;
    - KV-cache utilisation (weight 2): 1 - used / capacity;
    - prefix cache (weight 3): matched leading blocks / the prompt's blocks.
    """

    name = "prefix-aware"
    QUEUE_WEIGHT = 2.0
    KV_WEIGHT = 2.0
    PREFIX_WEIGHT = 3.0

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        queue = np.array([c.queue_depth for c in candidates], dtype=np.float64)
        spread = queue.max() - queue.min()
        queue_score = (queue.max() - queue) / spread if spread > 0 else np.ones_like(queue)
        kv_score = np.array(
            [1.0 - c.kv_used_bytes / c.kv_capacity_bytes for c in candidates], dtype=np.float64
        )
        hashes = request.prefix_hashes
        prefix_score = np.array(
            [c.cached_prefix_blocks(hashes) / len(hashes) if hashes else 0.0 for c in candidates],
            dtype=np.float64,
        )
        return (
            self.QUEUE_WEIGHT * np.clip(queue_score, 0.0, 1.0)
            + self.KV_WEIGHT * np.clip(kv_score, 0.0, 1.0)
            + self.PREFIX_WEIGHT * np.clip(prefix_score, 0.0, 1.0)
        )


class KvAwarePolicy(Policy):
    """NVIDIA Dynamo's KV-aware router: the lowest `overlap_weight * prefill blocks + decode
    blocks` wins (Dynamo `kv_router` default worker selector, overlap weight 1, temperature 0).

    Prefill blocks are the blocks this worker would still have to prefill (its queued prompt
    tokens plus this prompt's uncached part); decode blocks are the KV blocks it holds plus
    the ones this request adds. Like Dynamo, it counts blocks, not seconds, so it treats a
    slow accelerator like a fast one.
    """

    name = "kv-aware"
    OVERLAP_WEIGHT = 1.0

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        hashes = request.prefix_hashes
        prompt = request.prompt_tokens
        request_blocks = (prompt + request.max_output_tokens) / BLOCK_TOKENS
        cost = []
        for c in candidates:
            cached = min(c.cached_prefix_blocks(hashes) * BLOCK_TOKENS, prompt)
            prefill_blocks = (c.queued_prompt_tokens + prompt - cached) / BLOCK_TOKENS
            decode_blocks = c.kv_used_bytes / (c.kv_bytes_per_token * BLOCK_TOKENS)
            cost.append(self.OVERLAP_WEIGHT * prefill_blocks + decode_blocks + request_blocks)
        return -np.array(cost, dtype=np.float64)


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

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        est = estimate(request, candidates, topology)
        ttft_target, e2e_target = slo_targets_s(request, topology)
        ttft_ratio = est.ttft_s / ttft_target
        e2e_ratio = est.e2e_s / e2e_target
        latency = (
            ttft_ratio
            + e2e_ratio
            + self.MISS_PENALTY * ((ttft_ratio > 1.0).astype(np.float64) + (e2e_ratio > 1.0))
        )
        slo = topology.slo_by_name.get(request.slo) if request.slo is not None else None
        budget = (
            slo.max_usd_per_1k
            if slo is not None and slo.max_usd_per_1k
            else self.REFERENCE_USD_PER_1K
        )
        money = est.cost_usd * 1000.0 / budget
        load = np.array(
            [(c.queue_depth + c.running) / c.max_batch for c in candidates], dtype=np.float64
        )
        return -(
            self.LATENCY_WEIGHT * latency + self.MONEY_WEIGHT * money + self.LOAD_WEIGHT * load
        )


class SloAwareTeacher(Policy):
    """`optimizer.rl.teacher`'s SLO-aware rule, per node."""

    name = "slo-aware"
    TTFT_MARGIN = 0.7
    COST_WEIGHT = 0.3
    REFERENCE_USD_PER_1K = 1.0
    FALLBACK_TTFT_WEIGHT = 1.0

    def __init__(self) -> None:
        self._prefix_aware = PrefixAwarePolicy()

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        est = estimate(request, candidates, topology)
        ttft_target, _ = slo_targets_s(request, topology)
        slo = topology.slo_by_name.get(request.slo) if request.slo is not None else None
        budget = slo.max_usd_per_1k if slo is not None and slo.max_usd_per_1k else None
        cost_1k = est.cost_usd * 1000.0
        feasible = est.ttft_s <= self.TTFT_MARGIN * ttft_target
        if budget is not None:
            feasible &= cost_1k <= budget
        kv_free = np.array(
            [1.0 - c.kv_used_bytes / c.kv_capacity_bytes for c in candidates], dtype=np.float64
        )
        if not feasible.any():
            return kv_free - self.FALLBACK_TTFT_WEIGHT * est.ttft_s / ttft_target
        score = (
            self._prefix_aware.scores(request, candidates, topology)
            - est.ttft_s / ttft_target
            - self.COST_WEIGHT * cost_1k / (budget or self.REFERENCE_USD_PER_1K)
        )
        # Feasible candidates always outrank infeasible ones: the terms above are far below 1e6.
        return np.where(feasible, score, score - 1e6)


REFERENCE_FACTORIES: dict[str, Callable[[Topology, int], Policy]] = {
    "random": lambda topology, seed: RandomPolicy(seed),
    "round-robin": lambda topology, seed: RoundRobinPolicy(topology),
    "least-loaded": lambda topology, seed: LeastLoadedPolicy(),
    "latency-first": lambda topology, seed: LatencyFirstPolicy(),
    "cost-first": lambda topology, seed: CostFirstPolicy(),
    "data-gravity": lambda topology, seed: DataGravityPolicy(),
    "weighted-score": lambda topology, seed: WeightedScorePolicy(),
    "prefix-aware": lambda topology, seed: PrefixAwarePolicy(),
    "kv-aware": lambda topology, seed: KvAwarePolicy(),
    "slo-aware": lambda topology, seed: SloAwareTeacher(),
}


def reference_policy(name: str, topology: Topology, seed: int = 0) -> Policy:
    """The per-node version of the built-in heuristic (or teacher) `name`."""
    return REFERENCE_FACTORIES[name](topology, seed)
