"""Per-candidate estimates on kernel columns: `optimizer.estimates`' model and formulas, in
the same order of operations, so the floats are the same to the last bit (the parity tests
check it) while each term is one numpy operation over all candidates."""

from __future__ import annotations

import numpy as np

from optimizer.decide.request import BLOCK_TOKENS, PlacementRequest
from optimizer.decide.state.fleet import (
    D_QUEUE,
    D_QUEUED_TOKENS,
    D_RUNNING,
    R_EGRESS_PER_BYTE,
    R_RTT_S,
    R_S_PER_BYTE,
    R_SAME_SITE,
    S_MAX_BATCH,
    S_PREFILL_RATE,
    S_STEP_MS,
    S_STEP_MS_PER_SEQ,
    S_USD_PER_HOUR,
)

# docs/contracts.md §1: a prompt crosses the network at 4 bytes a token.
PROMPT_BYTES_PER_TOKEN = 4
# Output length assumed for the sequences ahead when a batch is full; the Azure 2023 and
# Mooncake traces have median outputs of 129 and 69 tokens and means of 211 and 149.
TYPICAL_OUTPUT_TOKENS = 150


class Estimates:
    """Per-candidate estimates (seconds, US dollars), as `optimizer.estimates.Estimates`."""

    __slots__ = (
        "rtt_s",
        "transfer_s",
        "wait_s",
        "prefill_s",
        "ttft_s",
        "e2e_s",
        "cost_usd",
        "cached_fraction",
        "same_site",
    )

    def __init__(
        self,
        request: PlacementRequest,
        s: np.ndarray,
        d: np.ndarray,
        r: np.ndarray,
        prefix_blocks: np.ndarray | None,
    ) -> None:
        """The candidates' static `s`, dynamic `d` and route `r` rows (`Candidates`), and
        their matched prefix blocks (None when the request has no prefix hashes)."""
        prompt = request.prompt_tokens
        prompt_bytes = PROMPT_BYTES_PER_TOKEN * prompt
        decode_tokens = max(request.max_output_tokens - 1, 0)
        cached, prefill, batch, step, _, wait = queue_and_prefill(prompt, s, d, prefix_blocks)
        if cached is None:
            cached = np.zeros(len(prefill))
        self.rtt_s = r[:, R_RTT_S]
        self.transfer_s = prompt_bytes * r[:, R_S_PER_BYTE]
        self.wait_s = wait
        self.prefill_s = prefill
        self.ttft_s = self.rtt_s + self.transfer_s + wait + prefill
        decode = decode_tokens * step
        self.e2e_s = self.ttft_s + decode
        self.cost_usd = s[:, S_USD_PER_HOUR] / 3600.0 * (prefill + decode / batch)
        self.cost_usd = self.cost_usd + prompt_bytes * r[:, R_EGRESS_PER_BYTE]
        self.cached_fraction = cached / prompt if prompt else np.zeros(len(cached))
        self.same_site = r[:, R_SAME_SITE]


def queue_and_prefill(
    prompt: int, s: np.ndarray, d: np.ndarray, prefix_blocks: np.ndarray | None
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The terms of a prompt's prefill on each node of the static `s` and dynamic `d` rows:
    its cached tokens (None when no prefix blocks are given: nothing cached), its uncached
    prefill seconds, the decode batch it would join and that batch's step seconds, how far
    past the batch limit it would queue (negative: room left) and its queue wait in seconds.
    `Estimates` and the split stage's prefill pool (`optimizer.decide.pickers.split`) both
    take them from here, so a node's numbers are the same to the last bit in either."""
    rate = s[:, S_PREFILL_RATE]
    max_batch = s[:, S_MAX_BATCH]
    queue = d[:, D_QUEUE]
    running = d[:, D_RUNNING]
    queued_tokens = d[:, D_QUEUED_TOKENS]
    # Shortcuts below skip operations whose result is known (no prompt blocks: nothing
    # cached; no queued tokens reported anywhere, as from exporters; no node decoding or
    # full): the same numbers with fewer numpy calls. `np.count_nonzero` tests for any,
    # at a fifth of `ndarray.any()`'s cost on a few candidates.
    cached: np.ndarray | None = None
    if prefix_blocks is not None:
        cached = np.minimum(prefix_blocks * BLOCK_TOKENS, prompt)
        prefill = (prompt - cached) / rate
    else:
        prefill = prompt / rate
    batch = np.minimum(running + 1, max_batch)
    step = (s[:, S_STEP_MS] + s[:, S_STEP_MS_PER_SEQ] * batch) / 1000.0
    # A node reporting no queued tokens is assumed to queue requests as long as this one.
    if np.count_nonzero(queued_tokens):
        queued = np.where(queued_tokens != 0, queued_tokens, queue * prompt)
    else:
        queued = queue * prompt
    wait = queued / rate
    busy = running != 0
    if np.count_nonzero(busy):
        wait = np.where(busy, wait + 0.5 * step, wait)
    overflow = queue + running + 1 - max_batch
    full = overflow > 0
    if np.count_nonzero(full):
        wait = np.where(full, wait + overflow / max_batch * TYPICAL_OUTPUT_TOKENS * step, wait)
    return cached, prefill, batch, step, overflow, wait
