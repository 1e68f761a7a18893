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
count it), and answers over its own route back to the source. They are computed once over
the trip's whole pool (`optimizer.decide.pickers.split_pool`: numpy columns, or Python floats
for a small pool), only the terms the split reads, and each side takes its nodes' from
there; the one-node answer's come from the same columns when the scorer made none.
"""

from __future__ import annotations

import numpy as np

from optimizer.decide.framework import Pair, Split, Trip
from optimizer.decide.pickers.split_pool import (
    SMALL_POOL,
    SmallSplitPool,
    SplitPool,
    bottom_k_small,
    pool_rows,
)
from optimizer.decide.pickers.top_k import bottom_k
from optimizer.decide.request import slo_targets_s
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.prefix import PrefixIndex

# Prompts with fewer uncached tokens stay on one node: their prefill takes a few tens of
# milliseconds on a datacentre GPU, less than a cross-site RTT. llm-d's handler takes the
# threshold from its config (its examples use 0, splitting every prompt, inside one cluster).
DEFAULT_THRESHOLD_TOKENS = 1024


def _lowest(values: np.ndarray | list[float], k: int) -> list[int]:
    """`bottom_k` of either pool pass's numbers (a list: the small pool's)."""
    if isinstance(values, list):
        return bottom_k_small(values, k)
    return bottom_k(values, k)


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
        """The answers, best first, when splitting wins; None keeps the one-node answers.
        `mixed`: the trip's one-node candidates (mixed nodes of its pool, on its state)."""
        request = trip.request
        if request.prompt_tokens <= self.threshold_tokens or k < 1:
            return None
        fleet = trip.fleet
        pool = trip.pool
        rows = pool_rows(trip)
        # Positions in the pool of the nodes that may prefill, and of those that may decode.
        p_at, d_at = rows.prefill_at, rows.decode_at
        if not len(p_at) or not len(d_at):
            return None
        aware = self.bandwidth_aware
        c = (SmallSplitPool if len(pool) <= SMALL_POOL else SplitPool)(trip, rows, mixed, prefix)
        done = c.done(rows, aware)
        p_order = _lowest(done, min(k, len(p_at)))
        best_p = p_order[0]
        best_q = int(p_at[best_p])
        cached = 0.0 if c.cached is None else c.cached[best_q] / request.prompt_tokens
        uncached = request.prompt_tokens * (1.0 - cached)
        if uncached <= self.threshold_tokens:
            return None
        model = fleet.model_index[request.model]
        kv_bytes = request.prompt_tokens * fleet.kv_per_token[model]
        # From the prefill node's site to each decode node's (NaN: no link joins them).
        site = rows.sites[best_q]
        transfer = fleet.kv_rtt_s[site].take(rows.decode_sites)
        if aware:
            transfer = transfer + kv_bytes * fleet.kv_s_per_byte[site].take(rows.decode_sites)
        ttft_target = slo_targets_s(request, fleet.topology)[0]
        # Costs are lower-better, NaN where no link joins the two sites (left out below).
        decode_wait, ttft, cost = c.decode(
            rows, transfer, done[best_p], ttft_target, self.LOAD_WEIGHT
        )
        # A node paired with itself is a one-node answer, which the mixed side already has.
        self_at = int(np.searchsorted(d_at, best_q))
        if self_at < len(d_at) and d_at[self_at] == best_q:
            cost[self_at] = np.nan
        d_order = _lowest(cost, min(k, len(d_at)))
        if not d_order:
            return None
        # Against the one-node answer the split would replace: the scorer's pick (its
        # estimates when the scorer made them, else the pick's from the pool's columns).
        mixed_ttft: float | None = None
        if order:
            pick = order[0]
            em = mixed.estimated
            if em is not None:
                one_node = em.ttft_s[pick] - (0.0 if aware else em.transfer_s[pick])
            else:
                q = int(np.searchsorted(pool, mixed.index[pick]))
                one_node = c.ttft_s(q) - (0.0 if aware else float(c.transfer_s[q]))
            mixed_ttft = float(one_node)
            if ttft[d_order[0]] >= mixed_ttft:
                return None
        answers: list[Pair] = []
        for j, d in enumerate(d_order):
            p = p_order[j] if j < len(p_order) else best_p
            dq = int(d_at[d])
            pair_ttft, pair_transfer = float(ttft[d]), float(transfer[d])
            if p != best_p:  # the j-th fallback pairs the j-th decode and prefill nodes
                pq = int(p_at[p])
                a, b = rows.sites[pq], rows.sites[dq]
                x = float(fleet.kv_rtt_s[a, b])
                if aware:
                    x += kv_bytes * float(fleet.kv_s_per_byte[a, b])
                if x == x and pq != dq:  # reachable, and two nodes
                    pair_transfer = x
                    pair_ttft = max(float(done[p]) + x, float(decode_wait[d])) + float(
                        rows.decode_back_s[d]
                    )
                else:
                    p = best_p
            split = Split(kv_bytes, pair_transfer, pair_ttft, mixed_ttft)
            answers.append(Pair(int(pool[dq]), int(pool[p_at[p]]), split))
        for j in order[: k - len(answers)]:
            answers.append(Pair(int(mixed.index[j])))
        return answers
