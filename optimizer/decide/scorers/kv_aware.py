"""The kv-aware scorer: NVIDIA Dynamo's KV-aware router's worker selection.

One scorer per file, as the GIE EPP lays out its scorer plugins
(pkg/epp/scheduling/framework/plugins/scorer); the per-node original is in
`optimizer.reference.policies`, the oracle of the parity tests."""

from __future__ import annotations

import numpy as np

from optimizer.decide.request import BLOCK_TOKENS
from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import D_KV_USED, D_QUEUED_TOKENS, S_KV_PER_TOKEN


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
