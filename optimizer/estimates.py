"""Per-candidate latency and cost estimates, from nothing but a request and node views.

This is the definition of "what would this request see on that node", per node; the decision
kernel computes the same formulas over columns (`optimizer.decide.state.estimates`, bit-identical,
checked by the parity tests), which the policies and the learned scorer's features read, so
the simulator and the live engine estimate identically. The model is the simulator's (see
`optimizer.sim`), with what a view cannot know replaced by stated guesses:

- TTFT = RTT + prompt transfer + queue wait + prefill of the uncached prompt.
- Queue wait = queued prompt tokens / prefill rate (when the node reports no queued tokens,
  each waiting request is assumed as long as this one), plus half a decode step when the node
  is decoding (a prefill starts at the next step boundary, as in vLLM without chunked
  prefill), plus, when the batch is full, the overflow's share of `TYPICAL_OUTPUT_TOKENS`
  decode steps (a slot frees when a sequence finishes).
- E2E = TTFT + (output - 1) decode steps at the batch the request would join (the prefill
  itself yields the first token).
- Cost (docs/contracts.md §1) = usd_per_hour prorated over the prefill plus a 1/batch share of each
  decode step, plus the egress of the prompt's bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.decide.request import BLOCK_TOKENS, PlacementRequest
from optimizer.decide.state.estimates import PROMPT_BYTES_PER_TOKEN, TYPICAL_OUTPUT_TOKENS
from optimizer.decision import NodeView
from optimizer.topology import Topology


@dataclass(frozen=True, slots=True)
class Estimates:
    """Estimates for each candidate, in candidate order (seconds and US dollars)."""

    rtt_s: np.ndarray
    transfer_s: np.ndarray
    wait_s: np.ndarray
    prefill_s: np.ndarray
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    cost_usd: np.ndarray
    cached_fraction: np.ndarray
    same_site: np.ndarray


def decode_step_s(node: NodeView, batch: int) -> float:
    """One decode step at `batch` sequences (docs/contracts.md §1)."""
    return (node.decode_step_ms + node.decode_step_ms_per_seq * batch) / 1000.0


def estimate(
    request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
) -> Estimates:
    """Estimates for `request` on each of `candidates` (which must be reachable)."""
    routes = topology.routes
    prompt = request.prompt_tokens
    prompt_bytes = PROMPT_BYTES_PER_TOKEN * prompt
    decode_tokens = max(request.max_output_tokens - 1, 0)
    blocks = request.prefix_hashes
    values = []
    for node in candidates:
        route = routes[(request.source_site, node.site)]
        cached = min(node.cached_prefix_blocks(blocks) * BLOCK_TOKENS, prompt)
        rate = node.prefill_tokens_per_s
        prefill = (prompt - cached) / rate
        batch = min(node.running + 1, node.max_batch)
        step = decode_step_s(node, batch)
        queued = node.queued_prompt_tokens or node.queue_depth * prompt
        wait = queued / rate
        if node.running:
            wait += 0.5 * step
        overflow = node.queue_depth + node.running + 1 - node.max_batch
        if overflow > 0:
            wait += overflow / node.max_batch * TYPICAL_OUTPUT_TOKENS * step
        transfer = prompt_bytes * route.s_per_byte
        ttft = route.rtt_s + transfer + wait + prefill
        decode = decode_tokens * step
        cost = node.usd_per_hour / 3600.0 * (prefill + decode / batch)
        cost += prompt_bytes * route.egress_usd_per_byte
        values.append(
            (
                route.rtt_s,
                transfer,
                wait,
                prefill,
                ttft,
                ttft + decode,
                cost,
                cached / prompt if prompt else 0.0,
                float(node.site == request.source_site),
            )
        )
    table = np.array(values, dtype=np.float64).reshape(len(values), 9)
    return Estimates(*(table[:, i] for i in range(9)))
