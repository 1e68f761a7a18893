"""The field's LLM-aware routers (llm-d, NVIDIA Dynamo) and Locus's two-stage weighted score
(per-node originals: `optimizer.reference.policies`)."""

from __future__ import annotations

import numpy as np

from optimizer.decision import BLOCK_TOKENS
from optimizer.kernel.candidates import Candidates
from optimizer.kernel.fleet import (
    D_KV_USED,
    D_QUEUE,
    D_QUEUED_TOKENS,
    D_RUNNING,
    S_KV_CAPACITY,
    S_KV_PER_TOKEN,
    S_MAX_BATCH,
)
from optimizer.policies.base import Policy


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

    def score(self, c: Candidates) -> np.ndarray:
        queue = c.dynamic[:, D_QUEUE]
        top = queue.max()
        spread = top - queue.min()
        queue_score = (top - queue) / spread if spread > 0 else np.ones_like(queue)
        kv_score = 1.0 - c.dynamic[:, D_KV_USED] / c.static[:, S_KV_CAPACITY]
        hashes = c.request.prefix_hashes
        total = self.QUEUE_WEIGHT * np.clip(queue_score, 0.0, 1.0) + self.KV_WEIGHT * np.clip(
            kv_score, 0.0, 1.0
        )
        if not hashes:
            return total  # the prefix term is 0 for every candidate
        prefix_score = c.prefix_blocks / len(hashes)
        return total + self.PREFIX_WEIGHT * np.clip(prefix_score, 0.0, 1.0)


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

    def score(self, c: Candidates) -> np.ndarray:
        request = c.request
        prompt = request.prompt_tokens
        request_blocks = (prompt + request.max_output_tokens) / BLOCK_TOKENS
        cached = np.minimum(c.prefix_blocks * BLOCK_TOKENS, prompt)
        prefill_blocks = (c.dynamic[:, D_QUEUED_TOKENS] + prompt - cached) / BLOCK_TOKENS
        decode_blocks = c.dynamic[:, D_KV_USED] / (c.static[:, S_KV_PER_TOKEN] * BLOCK_TOKENS)
        return -(self.OVERLAP_WEIGHT * prefill_blocks + decode_blocks + request_blocks)


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
