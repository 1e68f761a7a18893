"""What the split stage (`optimizer.decide.pickers.split`) prices on the trip's pool: each
prefill node's done time and each decode node's TTFT and cost, as two implementations of the
same estimates (`optimizer.decide.state.estimates`), to the last bit:
- `SplitPool`, numpy columns over the pool, for large pools;
- `SmallSplitPool`, Python floats node by node, for pools of at most `SMALL_POOL` nodes: the
  same IEEE operations in the same order give the same bits, and a pool of a few nodes then
  pays for a few hundred float operations instead of about sixty numpy calls, whose fixed
  cost (about half a microsecond each) is most of a small pool's time.
`tests/optimizer/decide/pickers/test_split_parity.py` holds both to the split stage as first
written, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optimizer.decide.framework import Trip
from optimizer.decide.request import BLOCK_TOKENS
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.estimates import (
    PROMPT_BYTES_PER_TOKEN,
    TYPICAL_OUTPUT_TOKENS,
    queue_and_prefill,
)
from optimizer.decide.state.fleet import (
    D_QUEUE,
    D_QUEUED_TOKENS,
    D_RUNNING,
    R_RTT_S,
    R_S_PER_BYTE,
    S_MAX_BATCH,
    S_PREFILL_RATE,
    S_STEP_MS,
    S_STEP_MS_PER_SEQ,
    PoolRows,
)
from optimizer.decide.state.prefix import PrefixIndex

# Pools up to this size are priced in Python floats. A whole split decision on copies of the
# P/D fleet's nodes (least-loaded, CPU time, best of 7 x 300): 8 nodes 28.1 us in Python
# floats against 40.5 us in numpy, 16: 46.1 against 48.5, 24: 53.0 against 49.9.
SMALL_POOL = 16


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


def _blocks(trip: Trip, mixed: Candidates, prefix: PrefixIndex | None) -> np.ndarray | None:
    """The scorer's prefix match of the mixed candidates, placed on the pool: the holders are
    walked once (None, no blocks: nothing cached, as `Estimates` counts it)."""
    if trip.request.prefix_hashes and prefix is not None:
        return mixed.prefix_match(prefix).on(trip.pool)
    return None


class SplitPool:
    """The prefill side's terms of `Estimates` on each node of the trip's pool (every role),
    in pool order: route, prompt transfer, queue wait, uncached prefill, cached tokens; and
    what the decode side's terms (`decode`) are made of. One pass over the pool serves both
    sides, and the mixed nodes' numbers equal their candidates' estimates to the last bit:
    the same function (`queue_and_prefill`) on the same rows."""

    __slots__ = ("rtt_s", "transfer_s", "wait_s", "prefill_s", "cached", "_d", "_step", "_over")

    def __init__(
        self, trip: Trip, rows: PoolRows, mixed: Candidates, prefix: PrefixIndex | None
    ) -> None:
        prompt = trip.request.prompt_tokens
        d = self._d = trip.dynamic.take(trip.pool, axis=0)
        self.cached, self.prefill_s, _, self._step, self._over, self.wait_s = queue_and_prefill(
            prompt, rows.static, d, _blocks(trip, mixed, prefix)
        )
        self.rtt_s = rows.routes[:, R_RTT_S]
        self.transfer_s = PROMPT_BYTES_PER_TOKEN * prompt * rows.routes[:, R_S_PER_BYTE]

    def done(self, rows: PoolRows, aware: bool) -> np.ndarray:
        """When each prefill node (`rows.prefill_at`) would be done: its way in (the prompt's
        transfer only when `aware`), queue wait and uncached prefill."""
        way_in = rows.back_s + self.transfer_s if aware else rows.back_s
        return (way_in + self.wait_s + self.prefill_s).take(rows.prefill_at)

    def decode(
        self, rows: PoolRows, transfer: np.ndarray, start: float, target: float, weight: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Of the decode nodes (`rows.decode_at`), in their order, given the KV's `transfer`
        seconds to each and the prefill's done time `start`: when each could admit one more
        sequence, its TTFT, and its cost (TTFT over `target` plus `weight` times its load;
        NaN where no link joins the sites). A decode node runs no prefill queue, so the
        prompt-token wait does not apply: half a decode step when it is busy, plus the
        overflow wait when its batch is full."""
        d_at, max_batch = rows.decode_at, rows.decode_max_batch
        d = self._d.take(d_at, axis=0)
        step = self._step.take(d_at)
        running = d[:, D_RUNNING]
        wait = np.where(running > 0, 0.5 * step, 0.0) + np.maximum(
            self._over.take(d_at), 0.0
        ) / max_batch * (TYPICAL_OUTPUT_TOKENS * step)
        ttft = np.maximum(start + transfer, wait) + rows.decode_back_s
        return wait, ttft, ttft / target + weight * ((d[:, D_QUEUE] + running) / max_batch)

    def ttft_s(self, q: int) -> float:
        """`Estimates.ttft_s` of the node at pool position `q`, in its order of operations."""
        return float(self.rtt_s[q] + self.transfer_s[q] + self.wait_s[q] + self.prefill_s[q])


class SmallSplitPool:
    """`SplitPool`'s numbers as Python floats, node by node, each in `queue_and_prefill`'s
    (and `SplitPool.decode`'s) order of operations, for a pool of at most `SMALL_POOL`."""

    __slots__ = (
        "rtt_s",
        "transfer_s",
        "wait_s",
        "prefill_s",
        "cached",
        "_queue",
        "_running",
        "_step",
        "_over",
    )

    def __init__(
        self, trip: Trip, rows: PoolRows, mixed: Candidates, prefix: PrefixIndex | None
    ) -> None:
        # The prompt as numpy sees it next to float64 columns (exact below 2**53).
        prompt = float(trip.request.prompt_tokens)
        blocks = _blocks(trip, mixed, prefix)
        d = trip.dynamic.take(trip.pool, axis=0)
        s = rows.static
        # Column by column into lists, zipped below: no index lookups per node.
        queue = self._queue = d[:, D_QUEUE].tolist()
        running = self._running = d[:, D_RUNNING].tolist()
        rate = s[:, S_PREFILL_RATE].tolist()
        cached: list[float] = []
        if blocks is None:
            prefill = [prompt / r for r in rate]
        else:
            for b in blocks.tolist():
                cached.append(min(b * BLOCK_TOKENS, prompt))
            prefill = [(prompt - c) / r for c, r in zip(cached, rate, strict=True)]
        step: list[float] = []
        over: list[float] = []
        wait: list[float] = []
        typical = TYPICAL_OUTPUT_TOKENS
        # `queue_and_prefill`'s terms written out, not a per-node call to a shared scalar
        # helper: such a call measured +1.7 to +2.0 us per 8-node pool (paired A/B, CPU time,
        # same digest of every number), and at 16 nodes it would cost more than the 2.4 us
        # this class saves over `SplitPool`. The parity test keeps the copy honest.
        for q, run, tokens, r, max_batch, ms, per_seq in zip(
            queue,
            running,
            d[:, D_QUEUED_TOKENS].tolist(),
            rate,
            s[:, S_MAX_BATCH].tolist(),
            s[:, S_STEP_MS].tolist(),
            s[:, S_STEP_MS_PER_SEQ].tolist(),
            strict=True,
        ):
            x = (ms + per_seq * min(run + 1, max_batch)) / 1000.0
            w = (tokens if tokens != 0 else q * prompt) / r
            if run != 0:
                w = w + 0.5 * x
            o = q + run + 1 - max_batch
            if o > 0:
                w = w + o / max_batch * typical * x
            step.append(x)
            over.append(o)
            wait.append(w)
        self.cached = cached if blocks is not None else None
        self.prefill_s, self._step, self._over, self.wait_s = prefill, step, over, wait
        routes = rows.routes.tolist()
        self.rtt_s = [r[R_RTT_S] for r in routes]
        per_prompt = PROMPT_BYTES_PER_TOKEN * trip.request.prompt_tokens
        self.transfer_s = [per_prompt * r[R_S_PER_BYTE] for r in routes]

    def done(self, rows: PoolRows, aware: bool) -> list[float]:
        back, transfer, wait, prefill = (
            rows.back_s.tolist(),
            self.transfer_s,
            self.wait_s,
            self.prefill_s,
        )
        if aware:
            return [back[q] + transfer[q] + wait[q] + prefill[q] for q in rows.prefill_at.tolist()]
        return [back[q] + wait[q] + prefill[q] for q in rows.prefill_at.tolist()]

    def decode(
        self, rows: PoolRows, transfer: np.ndarray, start: float, target: float, weight: float
    ) -> tuple[list[float], list[float], list[float]]:
        queues, runnings, step, over = self._queue, self._running, self._step, self._over
        waits: list[float] = []
        ttfts: list[float] = []
        costs: list[float] = []
        for q, x, mb, back in zip(
            rows.decode_at.tolist(),
            transfer.tolist(),
            rows.decode_max_batch.tolist(),
            rows.decode_back_s.tolist(),
            strict=True,
        ):
            queue, running, y = queues[q], runnings[q], step[q]
            w = (0.5 * y if running > 0 else 0.0) + max(over[q], 0.0) / mb * (
                TYPICAL_OUTPUT_TOKENS * y
            )
            # As np.maximum: NaN (no link) when the first is, which max() returns then.
            ttft = max(start + x, w) + back
            waits.append(w)
            ttfts.append(ttft)
            costs.append(ttft / target + weight * ((queue + running) / mb))
        return waits, ttfts, costs

    def ttft_s(self, q: int) -> float:
        return self.rtt_s[q] + self.transfer_s[q] + self.wait_s[q] + self.prefill_s[q]


def bottom_k_small(values: Sequence[float], k: int) -> list[int]:
    """`top_k.bottom_k` of a list: the first `k` positions by ascending value, ties in
    order, leaving out NaN."""
    known = [j for j, v in enumerate(values) if v == v]
    known.sort(key=values.__getitem__)  # stable: ties keep their order
    return known[:k]
