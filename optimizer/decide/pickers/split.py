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
the trip's whole pool (`SplitPool`), only the terms the split reads, and each side takes its
nodes' from there; the one-node answer's come from the same columns when the scorer made
none.
"""

from __future__ import annotations

import numpy as np

from optimizer.decide.framework import Pair, Split, Trip
from optimizer.decide.pickers.top_k import bottom_k
from optimizer.decide.request import slo_targets_s
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.estimates import (
    PROMPT_BYTES_PER_TOKEN,
    TYPICAL_OUTPUT_TOKENS,
    queue_and_prefill,
)
from optimizer.decide.state.fleet import (
    D_QUEUE,
    D_RUNNING,
    R_RTT_S,
    R_S_PER_BYTE,
    PoolRows,
)
from optimizer.decide.state.prefix import PrefixIndex

# Prompts with fewer uncached tokens stay on one node: their prefill takes a few tens of
# milliseconds on a datacentre GPU, less than a cross-site RTT. llm-d's handler takes the
# threshold from its config (its examples use 0, splitting every prompt, inside one cluster).
DEFAULT_THRESHOLD_TOKENS = 1024


class SplitPool:
    """What the split stage reads of each node of the trip's pool (every role), in pool
    order: the prefill side's terms of `Estimates` (route, prompt transfer, queue wait,
    uncached prefill, cached tokens), and what the decode side's terms (`decode_side`) are
    made of. One pass over the pool serves both sides, and the mixed nodes' numbers equal
    their candidates' estimates to the last bit: the same function (`queue_and_prefill`) on
    the same rows."""

    __slots__ = (
        "rtt_s",
        "transfer_s",
        "wait_s",
        "prefill_s",
        "cached",
        "_dynamic",
        "_step",
        "_overflow",
    )

    def __init__(
        self,
        trip: Trip,
        rows: PoolRows,
        mixed: Candidates,
        prefix: PrefixIndex | None,
    ) -> None:
        """`rows`: the pool's (`pool_rows`)."""
        request, pool = trip.request, trip.pool
        s = rows.static
        d = self._dynamic = trip.dynamic.take(pool, axis=0)
        # The scorer's prefix match of the mixed candidates, placed on the pool: the holders
        # are walked once (no blocks: nothing cached, as `Estimates` counts it).
        hashes = request.prefix_hashes
        blocks = mixed.prefix_match(prefix).on(pool) if hashes and prefix is not None else None
        prompt = request.prompt_tokens
        self.cached, self.prefill_s, _, self._step, self._overflow, self.wait_s = queue_and_prefill(
            prompt, s, d, blocks
        )
        self.rtt_s = rows.routes[:, R_RTT_S]
        self.transfer_s = PROMPT_BYTES_PER_TOKEN * prompt * rows.routes[:, R_S_PER_BYTE]

    def decode_side(self, rows: PoolRows) -> tuple[np.ndarray, np.ndarray]:
        """Of the decode nodes (`rows.decode_at`), in their order: when each could admit one
        more sequence, and its load. A decode node runs no prefill queue, so the prompt-token
        wait does not apply: half a decode step when it is busy, plus the overflow wait when
        its batch is full."""
        d_at, max_batch = rows.decode_at, rows.decode_max_batch
        d = self._dynamic.take(d_at, axis=0)
        step = self._step.take(d_at)
        running = d[:, D_RUNNING]
        wait = np.where(running > 0, 0.5 * step, 0.0) + np.maximum(
            self._overflow.take(d_at), 0.0
        ) / max_batch * (TYPICAL_OUTPUT_TOKENS * step)
        return wait, (d[:, D_QUEUE] + running) / max_batch

    def ttft_s(self, q: int) -> float:
        """`Estimates.ttft_s` of the node at pool position `q`, in its order of operations."""
        return float(self.rtt_s[q] + self.transfer_s[q] + self.wait_s[q] + self.prefill_s[q])


def pool_rows(trip: Trip) -> PoolRows:
    """The trip's pool's rows for the split stage: the constraints' (`StaticSplit.pool`)
    when nothing narrowed them, as in most decisions."""
    fleet, pool, split = trip.fleet, trip.pool, trip.split
    if split is not None and pool is split.index:
        return split.pool
    request = trip.request
    # `take` gathers rows at a third of fancy indexing's cost.
    s = fleet.static[fleet.model_index[request.model]].take(pool, axis=0)
    return fleet.pool_rows(pool, s, fleet.routes_from(request.source_site).take(pool, axis=0))


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
        c = SplitPool(trip, rows, mixed, prefix)
        way_in = rows.back_s + c.transfer_s if aware else rows.back_s
        done = (way_in + c.wait_s + c.prefill_s).take(p_at)
        p_order = bottom_k(done, min(k, len(p_at)))
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
        transfer = rows.decode_kv_rtt_s[site]
        if aware:
            transfer = transfer + kv_bytes * rows.decode_kv_s_per_byte[site]
        decode_wait, load = c.decode_side(rows)
        ttft = np.maximum(done[best_p] + transfer, decode_wait) + rows.decode_back_s
        ttft_target = slo_targets_s(request, fleet.topology)[0]
        # Lower is better; NaN where no link joins the two sites, which `bottom_k` leaves out.
        cost = ttft / ttft_target + self.LOAD_WEIGHT * load
        # A node paired with itself is a one-node answer, which the mixed side already has.
        self_at = int(np.searchsorted(d_at, best_q))
        if self_at < len(d_at) and d_at[self_at] == best_q:
            cost[self_at] = np.nan
        d_order = bottom_k(cost, min(k, len(d_at)))
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
