"""The simulator's node model, opened to requests that come and go while it runs.

`LiveTable` is the simulator's request table (`optimizer.sim.requests`) grown one request at a
time, its rows reused once a request is over, so a server that runs for days keeps as many
rows as it has requests in flight. `EmulatedNode` is the simulator's node
(`optimizer.sim.node.SimNode`, unchanged) plus the one thing a server needs that a trace
replay never does: `cancel`, for a client that goes away.
"""

from __future__ import annotations

import heapq
from typing import Any

from optimizer.sim.node import DECODE, PREFILL, SimNode
from optimizer.sim.requests import PENDING, RequestTable

# Columns a new row starts with besides those `add` is given.
_FRESH: dict[str, Any] = {
    "cached": 0,
    "cost": 0.0,
    "share_start": 0.0,
    "ttft": 0.0,
    "e2e": 0.0,
    "status": PENDING,
    "first_at": 0.0,
    "start_round": 0,
    # Not split: an emulated node runs both phases of what it is sent (the split columns of
    # `RequestTable`, issue #30).
    "prefill_node": -1,
    "prefilled": False,
}


class LiveTable(RequestTable):
    """Request columns for requests that arrive while the model runs (`add`, `release`).

    Beside the simulator's columns it keeps, per request, when its first token came out of
    prefill (`first_at`, model seconds) and the node's decode round count at that moment
    (`start_round`): a decoding request has `1 + rounds done since - start_round` tokens."""

    def __init__(self, model_index: dict[str, int], kv_bytes_per_token: dict[str, int]) -> None:
        super().__init__([], [], model_index, kv_bytes_per_token)
        self.first_at: list[float] = []
        self.start_round: list[int] = []
        self.nodes: list[SimNode] = []  # the fleet's nodes, by index (set by their owner)
        self._free: list[int] = []

    def add(
        self,
        *,
        node: int,
        model: int,
        prompt: int,
        output: int,
        hashes: tuple[int, ...],
        kv_need: int,
        arrival: float,
        half_rtt: float,
    ) -> int:
        """A new request's row; returns its id."""
        row = dict(
            _FRESH,
            node=node,
            model=model,
            prompt=prompt,
            output=output,
            hashes=hashes,
            kv_need=kv_need,
            kv_prompt=kv_need * prompt // max(prompt + output, 1),
            arrival=arrival,
            half_rtt=half_rtt,
        )
        if self._free:
            rid = self._free.pop()
            for name, value in row.items():
                getattr(self, name)[rid] = value
        else:
            rid = len(self.arrival)
            for name, value in row.items():
                getattr(self, name).append(value)
        return rid

    def release(self, rid: int) -> None:
        """Request `rid` is over and nothing reads its row any more: reuse it."""
        self.hashes[rid] = ()
        self._free.append(rid)

    def first_token(self, rid: int, now: float) -> None:
        super().first_token(rid, now)
        self.first_at[rid] = now
        self.start_round[rid] = self.nodes[self.node[rid]].rounds


class EmulatedNode(SimNode):
    """`SimNode` with `cancel`."""

    __slots__ = ()

    def cancel(self, rid: int, now: float) -> None:
        """Request `rid` (queued, prefilling or decoding here) is abandoned at `now`: its batch
        slot and KV are free at once. The node then goes on as if the request had never
        come: a decode run in progress ends with the round in progress where its batch
        changes, or where the queue's new head may start its prefill (as `SimNode.arrive`
        cuts a run for an admissible head: `SimNode._cut`)."""
        t = self._table
        if rid == self.current:
            self.busy_s += now - self.phase_start
            self.current = -1
            self._free(rid)
            self.version += 1
            self.schedule(now)
        elif rid in self.waiting:
            head = self.waiting[0] == rid
            self.waiting.remove(rid)
            if t.prefilled[rid]:  # a decode half: counted as expected, not as a prompt
                self.expected.discard(rid)
            else:
                self.queued_tokens -= t.prompt[rid]
            if head and self.waiting and self._admissible(self.waiting[0]):
                self._cut(now)
        else:
            kept = [entry for entry in self.decoding if entry[1] != rid]
            if len(kept) == len(self.decoding):
                raise ValueError(f"request {rid} is not on node {self.name}")
            heapq.heapify(kept)
            self.decoding = kept
            self.batch[t.model[rid]] -= 1
            self._free(rid)
            self._cut(now)
        self.sync()

    def _free(self, rid: int) -> None:
        t = self._table
        pinned = self.pinned.pop(rid, 0)
        if pinned:
            self.cache.unpin(t.model[rid], t.hashes[rid], pinned)
        self.reserved -= t.kv_need[rid]
        self.running -= 1


__all__ = ["DECODE", "PREFILL", "EmulatedNode", "LiveTable"]
