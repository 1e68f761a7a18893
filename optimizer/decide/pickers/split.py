"""The split stage: a prefill node and a decode node for a long prompt, when that beats one
node running both phases (issue #30).

As the field ships it:
- llm-d's `pd-profile-handler` (llm-d-inference-scheduler, docs/disagg_pd.md) runs a decode
  profile always and a prefill profile only when the prompt's uncached tokens exceed a
  `threshold`; its prefill profile scores pods by queue and prefix-cache hits, its decode
  profile by load (queue, KV use), each over the pods its `prefill-filter`/`decode-filter`
  (`llm-d.ai/role`) leave; the decode sidecar then calls the prefiller named in the
  `x-prefiller-host-port` header;
- vLLM production-stack's `DisaggregatedPrefillRouter` (src/vllm_router/routers/
  routing_logic.py) sends every request to a prefill endpoint (by model label), then to a
  decode endpoint chosen by load.
Both work inside one cluster, where the KV transfer is nearly free. Locus spans sites, so
this stage also prices the transfer: the prompt's KV (`kv_bytes_per_token` of the model,
docs/contracts.md §1) crosses the link between the two sites at its bandwidth after its RTT
(`Fleet.kv_rtt_s`, `Fleet.kv_s_per_byte`), and a split is kept only when its estimated TTFT
beats the one-node answer's (the scorer's pick, which the split would replace).
`bandwidth_aware=False` is the variant that ignores the
links' bandwidth (only their RTT counts), kept to show what pricing the transfer is worth.

The estimates are the decision's own (`optimizer.decide.state.estimates`): the prefill node's
done time is its network way in, its queue wait and its uncached prefill; the decode node
starts when the KV has arrived and it has a batch slot (its overflow wait, as the estimates
count it), and answers over its own route back to the source.
"""

from __future__ import annotations

import numpy as np

from optimizer.decide.framework import Pair, Split, Trip
from optimizer.decide.pickers.top_k import top_k
from optimizer.decide.request import slo_targets_s
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.estimates import TYPICAL_OUTPUT_TOKENS
from optimizer.decide.state.fleet import (
    D_QUEUE,
    D_RUNNING,
    S_MAX_BATCH,
    S_STEP_MS,
    S_STEP_MS_PER_SEQ,
)
from optimizer.decide.state.prefix import PrefixIndex

# Prompts with fewer uncached tokens stay on one node: their prefill takes a few tens of
# milliseconds on a datacentre GPU, less than a cross-site RTT. llm-d's handler takes the
# threshold from its config (its examples use 0, splitting every prompt, inside one cluster).
DEFAULT_THRESHOLD_TOKENS = 1024


def decode_wait_s(c: Candidates) -> np.ndarray:
    """Seconds before each decode candidate could admit one more sequence: half a decode step
    when it is busy, plus the estimates' overflow wait when its batch is full (a decode node
    runs no prefill queue, so the prompt-token wait of `Estimates` does not apply)."""
    s, d = c.static, c.dynamic
    max_batch = s[:, S_MAX_BATCH]
    running = d[:, D_RUNNING]
    batch = np.minimum(running + 1, max_batch)
    step = (s[:, S_STEP_MS] + s[:, S_STEP_MS_PER_SEQ] * batch) / 1000.0
    overflow = np.maximum(d[:, D_QUEUE] + running + 1 - max_batch, 0.0)
    return np.where(running > 0, 0.5 * step, 0.0) + overflow / max_batch * (
        TYPICAL_OUTPUT_TOKENS * step
    )


class ThresholdSplitter:
    """Split above a prompt-length threshold: prefill by queue plus prefix, decode by load
    and the transfer to it, kept when the pair's estimated TTFT beats the one-node pick's."""

    LOAD_WEIGHT = 0.2  # weighted-score's: keeps decode headroom for bursts

    def __init__(
        self, threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS, *, bandwidth_aware: bool = True
    ) -> None:
        if threshold_tokens < 0:
            raise ValueError(f"the split threshold must be >= 0 tokens, not {threshold_tokens}")
        self.threshold_tokens = threshold_tokens
        self.bandwidth_aware = bandwidth_aware
        self.name = "pd-threshold" if bandwidth_aware else "pd-threshold-blind"

    def pairs(
        self,
        trip: Trip,
        mixed: Candidates,
        order: list[int],
        k: int,
        prefix: PrefixIndex | None,
    ) -> list[Pair] | None:
        """The answers, best first, when splitting wins; None keeps the one-node answers."""
        request = trip.request
        if request.prompt_tokens <= self.threshold_tokens or k < 1:
            return None
        fleet = trip.fleet
        pool = trip.pool
        p_index = pool[fleet.can_prefill[pool]]
        d_index = pool[fleet.can_decode[pool]]
        if not len(p_index) or not len(d_index):
            return None
        aware = self.bandwidth_aware
        pre = Candidates(fleet, request, p_index, trip.dynamic, prefix)
        ep = pre.est
        way_in = ep.rtt_s / 2 + ep.transfer_s if aware else ep.rtt_s / 2
        done = way_in + ep.wait_s + ep.prefill_s
        p_order = top_k(-done, min(k, len(p_index)))
        best_p = p_order[0]
        uncached = request.prompt_tokens * (1.0 - ep.cached_fraction[best_p])
        if uncached <= self.threshold_tokens:
            return None
        dec = Candidates(fleet, request, d_index, trip.dynamic)
        model = fleet.model_index[request.model]
        kv_bytes = request.prompt_tokens * fleet.kv_per_token[model]
        d_sites = fleet.node_site[d_index]
        d_wait = decode_wait_s(dec)
        d_back = dec.routes[:, 0] / 2  # the first token's way back to the source

        site = fleet.node_site[p_index[best_p]]
        transfer = fleet.kv_rtt_s[site, d_sites]
        if aware:
            transfer = transfer + kv_bytes * fleet.kv_s_per_byte[site, d_sites]
        ttft = np.maximum(done[best_p] + transfer, d_wait) + d_back
        ttft_target = slo_targets_s(request, fleet.topology)[0]
        load = (dec.dynamic[:, D_QUEUE] + dec.dynamic[:, D_RUNNING]) / dec.static[:, S_MAX_BATCH]
        score = -(ttft / ttft_target + self.LOAD_WEIGHT * load)
        # A node paired with itself is a one-node answer, which the mixed side already has.
        reachable = ~np.isnan(score) & (d_index != p_index[best_p])
        if not reachable.any():
            return None
        score = np.where(reachable, score, -np.inf)
        d_order = [j for j in top_k(score, min(k, len(d_index))) if reachable[j]]
        best_d = d_order[0]
        # Against the one-node answer the split would replace: the scorer's pick (its
        # estimates when the scorer made them, else the pick's alone).
        mixed_ttft: float | None = None
        if order:
            pick = order[0]
            em = mixed.estimated
            if em is None:
                keep = np.zeros(len(mixed), dtype=bool)
                keep[pick] = True
                em, pick = mixed.take(keep).est, 0
            one_node = em.ttft_s[pick] - (0.0 if aware else em.transfer_s[pick])
            mixed_ttft = float(one_node)
            if ttft[best_d] >= mixed_ttft:
                return None
        answers: list[Pair] = []
        ttfts, transfers = ttft.tolist(), transfer.tolist()
        for j, d in enumerate(d_order):
            p = p_order[j] if j < len(p_order) else best_p
            pair_ttft, pair_transfer = ttfts[d], transfers[d]
            if p != best_p:  # the j-th fallback pairs the j-th decode and prefill nodes
                a, b = fleet.node_site[p_index[p]], d_sites[d]
                x = float(fleet.kv_rtt_s[a, b])
                if aware:
                    x += kv_bytes * float(fleet.kv_s_per_byte[a, b])
                if x == x and p_index[p] != d_index[d]:  # reachable, and two nodes
                    pair_transfer = x
                    pair_ttft = max(float(done[p]) + x, float(d_wait[d])) + float(d_back[d])
                else:
                    p = best_p
            split = Split(kv_bytes, pair_transfer, pair_ttft, mixed_ttft)
            answers.append(Pair(int(d_index[d]), int(p_index[p]), split))
        for j in order[: k - len(answers)]:
            answers.append(Pair(int(mixed.index[j])))
        return answers
