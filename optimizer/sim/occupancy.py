"""What one simulated node holds, and whether the head of its queue fits: the space half of a node.

A node's state splits along the line between space and time. This module is space: the FCFS
queue and the requests still crossing the network to it, the KV bytes its admitted sequences
reserve, the prefix-cache blocks they pin, the decoding sequences per model that fill its batch
slots, and the row of the fleet's dynamic columns it publishes (`sync`), which is all a policy
reads of it. `optimizer.sim.node` is time: when a prefill or decode run starts and ends, what
it costs and which sequences it finishes. Time changes what is held only through the methods
here, so the admission rule and the KV and cache bookkeeping have one home, and the scheduler
(the part chunked prefill made longer) reads as a scheduler.

Admission (vLLM-style, reserving the maximum length): the head is admitted when its model has
a free batch slot and the node has KV room for its whole sequence, or only for its prompt on
the prefill node of a split request (issue #30), which holds that KV until the engine says its
transfer to the decode node is done (`release`). On admission the prompt's cached leading
blocks are pinned, not evictable while its prefill reads them; once prefilled, all its blocks
join the cache pinned, as its own KV, and stay cached after it finishes while room lasts. A
split request's decode half arrives prefilled: it reserves its whole sequence and its prompt
blocks join the cache as after a prefill.

What a node publishes of a decode half (issue #30): from the decision on it is `expected`, and
until its admission it counts among the running sequences, not in the queue. It never waits
for a prefill, only for a batch slot, and the decision's estimates price each queued request
as a prompt to prefill (`optimizer.decide.state.estimates.queue_and_prefill`): counted in the
queue, decode halves made mixed nodes look full for prefill while they sat idle. Among the
running they weigh on the decode step and the batch-overflow wait, as they will. A real
decode node's view differs in its timing: llm-d's sidecar sends the decode request only once
the prefill is done, and vLLM counts it in `num_requests_waiting` while its KV is pulled
(`WAITING_FOR_REMOTE_KVS`); the simulator keeps the decision-time count, which the deciders'
`LiveState` models between samples. A run without splits has none, so it reports as before.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from optimizer.decide.request import BLOCK_TOKENS
from optimizer.decide.state.fleet import (
    D_KV_USED,
    D_QUEUE,
    D_QUEUED_TOKENS,
    D_RUNNING,
    S_KV_CAPACITY,
    S_MAX_BATCH,
    Fleet,
)
from optimizer.decide.state.prefix import PrefixCache
from optimizer.sim.requests import RequestTable


class NodeOccupancy:
    """A node's queue, KV reservations and cache pins; `sync` publishes them to the fleet's
    dynamic columns (`optimizer.decide.state.fleet`), which policies read. The scheduler
    (`optimizer.sim.node.SimNode`) builds on it."""

    __slots__ = (
        "index",
        "name",
        "capacity",
        "reserved",
        "state",
        "waiting",
        "in_flight",
        "expected",
        "queued_tokens",
        "running",
        "batch",
        "models",
        "_fleet",
        "_dynamic",
        "cache",
        "max_batch",
        "block_bytes",
        "_table",
        "handing",
        "pinned",
    )

    def __init__(
        self, index: int, fleet: Fleet, dynamic: np.ndarray, cache: PrefixCache, table: RequestTable
    ) -> None:
        """Node `index` of `fleet`; `dynamic` is the fleet's dynamic columns, written by
        `sync`; `cache` its prefix cache (of the simulator's `PrefixIndex`). Ends empty
        (`_reset`)."""
        self.index = index
        self.name = fleet.names[index]
        self._fleet = fleet
        self._dynamic = dynamic
        self.models = [m for m in range(len(fleet.static)) if fleet.served[m][index]]
        self.capacity = int(fleet.static[0][index][S_KV_CAPACITY])
        self.max_batch = {m: int(fleet.static[m][index][S_MAX_BATCH]) for m in self.models}
        self.block_bytes = {m: BLOCK_TOKENS * fleet.kv_per_token[m] for m in self.models}
        self.state = fleet.topology.nodes[index].state
        self._table = table
        self.cache = cache
        # Requests placed here still crossing the network, and the prompt tokens of those plus
        # the queued ones; both survive a failure (the engine re-places late arrivals).
        self.in_flight = 0
        self.queued_tokens = 0
        # Decode halves placed here and not admitted yet (crossing, or waiting): counted in
        # `in_flight` or `waiting`, published as running (see the module docstring).
        self.expected: set[int] = set()
        self._reset()

    def _reset(self) -> None:
        """Hold nothing: at the start, and after a failure (the cache is lost too)."""
        self.reserved = 0
        self.pinned: dict[int, int] = {}  # request -> leading blocks of its prompt it pins
        self.handing: set[int] = set()  # prefilled split requests whose KV is being sent
        self.waiting: deque[int] = deque()
        self.running = 0  # admitted sequences, prefilling or decoding
        self.batch = {m: 0 for m in self.models}  # decoding sequences per model
        self.cache.clear()

    def sync(self) -> None:
        """Publish the dynamic state to the fleet's columns policies read."""
        row = self._dynamic[self.index]
        expected = len(self.expected)
        row[D_QUEUE] = len(self.waiting) + self.in_flight - expected
        row[D_RUNNING] = self.running + expected
        row[D_KV_USED] = self.reserved
        row[D_QUEUED_TOKENS] = self.queued_tokens
        self._fleet.set_state(self.index, self.state)

    def _need(self, rid: int) -> int:
        """KV bytes `rid` reserves here: its prompt's on its prefill node, else its sequence's."""
        t = self._table
        return t.kv_prompt[rid] if t.prefill_node[rid] == self.index else t.kv_need[rid]

    def _admissible(self, rid: int) -> bool:
        m = self._table.model[rid]
        return (
            self.batch[m] < self.max_batch[m] and self.reserved + self._need(rid) <= self.capacity
        )

    def _admit(self, rid: int) -> float:
        """Admit `rid` (the queue's head, admissible): pin its prompt's cached leading blocks,
        reserve its KV; returns the prompt tokens its prefill still has to compute (none for a
        split request on its decode node: its KV came from its prefill node)."""
        t = self._table
        m = t.model[rid]
        hashes = t.hashes[rid]
        matched = self.cache.match(m, hashes)
        self.cache.use(m, hashes, matched)
        self.cache.pin(m, hashes, 0, matched)  # read by this prefill: not evictable under it
        self.pinned[rid] = matched
        prompt = t.prompt[rid]
        if t.prefilled[rid]:
            left = 0.0
            self.expected.discard(rid)
        else:
            cached = min(matched * BLOCK_TOKENS, prompt)
            t.cached[rid] = cached
            left = float(prompt - cached)
            self.queued_tokens -= prompt
        self.reserved += self._need(rid)
        self.running += 1
        self.cache.shrink(self.capacity - self.reserved)
        return left

    def _cache_prompt(self, rid: int) -> None:
        """`rid`'s prompt is prefilled: its blocks join the cache pinned. They are this
        sequence's own KV (its reservation holds them) until it finishes, then stay cached
        while room lasts."""
        t = self._table
        m = t.model[rid]
        hashes = t.hashes[rid]
        self.cache.add(m, hashes, self.block_bytes[m])
        self.cache.pin(m, hashes, self.pinned[rid], len(hashes))
        self.pinned[rid] = len(hashes)
        self.cache.shrink(self.capacity - self.reserved)

    def _unreserve(self, rid: int, kv_bytes: int) -> None:
        """`rid` leaves the node (finished, or its KV handed on): unpin its blocks (they stay
        cached while room lasts) and free its `kv_bytes` and its place among the running."""
        pinned = self.pinned.pop(rid, 0)
        if pinned:
            self.cache.unpin(self._table.model[rid], self._table.hashes[rid], pinned)
        self.reserved -= kv_bytes
        self.running -= 1

    def _go_down(self) -> list[int]:
        """Hold nothing and be down; returns the queued requests, for the engine to place
        again. Prefilled split requests' KV being sent is lost with the node (the engine
        re-places them)."""
        self.handing.clear()
        requeue = list(self.waiting)
        self.expected.difference_update(requeue)
        # Only prompts still to prefill count in `queued_tokens`: a waiting decode half
        # (prefilled) never added its prompt (issue #30).
        prefilled = self._table.prefilled
        self.queued_tokens -= sum(self._table.prompt[rid] for rid in requeue if not prefilled[rid])
        self._reset()
        self.state = "down"
        self.sync()
        return requeue
