"""The prefix-aware scorer: llm-d's inference scheduler with its default weighted scorers.

One scorer per file, as the GIE EPP lays out its scorer plugins
(pkg/epp/scheduling/framework/plugins/scorer); the per-node original is in
`optimizer.reference.policies`, the oracle of the parity tests."""

from __future__ import annotations

import numpy as np

from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import D_KV_USED, D_QUEUE, S_KV_CAPACITY


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
