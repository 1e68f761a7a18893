"""The simulator's node model run against the wall clock, on one asyncio event loop.

Model time is the loop's clock since the fleet started. The nodes are the simulator's
(`EmulatedNode`, `optimizer.sim.node`); this module is the simulator's event loop
(`optimizer.sim.engine`) with the heap drained by a timer instead of a `while`: every event
runs at its own model time, however late the timer fires, so the model's timings are exact
and only their delivery to a client can be late (measured in docs/emulator.md).

A request submitted at model time `a` from source site S to node N:
- reaches N at `a + RTT/2 + prompt bytes (4 a token) * seconds per byte of the S-N link`, as
  the simulator sends it (`Simulator.send`);
- its first token leaves N when its prefill ends, each further token when a decode round
  ends (round ends are the only instants a streaming client is woken for: `_TICK`);
- each token reaches the client RTT/2 after it leaves N.
Due events always run before a submission or a cancellation, so an arrival never lands
before an event that the model says happened earlier.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np

from optimizer.decide.state.estimates import PROMPT_BYTES_PER_TOKEN
from optimizer.decide.state.fleet import DYNAMIC_COLUMNS, Fleet
from optimizer.decide.state.prefix import PrefixIndex
from optimizer.emulator.metrics import EngineCounters, EngineState
from optimizer.emulator.node import DECODE, EmulatedNode, LiveTable
from optimizer.emulator.sequence import Sequence
from optimizer.sim.requests import SERVED
from optimizer.topology import Topology

_AT_NODE, _WAKE, _TICK = 0, 1, 2


class EmulatedFleet:
    """Every node of `topology` as the simulator models it, in real time. Create it inside
    the running event loop that will serve it."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.fleet = Fleet(topology)
        self._loop = asyncio.get_running_loop()
        self._t0 = self._loop.time()
        kv_per_token = {m.name: m.kv_bytes_per_token for m in topology.models}
        self.table = LiveTable(self.fleet.model_index, kv_per_token)
        self._dynamic = np.zeros((self.fleet.size, DYNAMIC_COLUMNS), dtype=np.float64)
        prefix = PrefixIndex(self.fleet.size, indexed=False)
        self.nodes = [
            EmulatedNode(i, self.fleet, self._dynamic, prefix.cache_of(i), self.table, self._wake)
            for i in range(self.fleet.size)
        ]
        self.table.nodes = list(self.nodes)
        self.counters = [{m: EngineCounters() for m in node.models} for node in self.nodes]
        self._seqs: dict[int, Sequence] = {}
        self._streams = [0] * self.fleet.size  # streaming sequences per node
        self._armed: list[tuple[int, int]] = [(-1, -1)] * self.fleet.size  # (version, round)
        self._heap: list[tuple[float, int, int, int, Any]] = []
        self._order = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        self._last = 0.0  # model time of the last event run
        # `ip:port` -> node index of every listener (the server fills it), for the prefill
        # node a decode request names (`optimizer.emulator.phases`).
        self.endpoints: dict[str, int] = {}
        # Called once per request when it is over: (sequence, served in full).
        self.on_end: Callable[[Sequence, bool], None] | None = None

    # -- clock and events --------------------------------------------------------------------
    def now(self) -> float:
        """Model time: seconds since the fleet started, on the loop's clock."""
        return self._loop.time() - self._t0

    def _push(self, at: float, kind: int, node: int, payload: Any) -> None:
        heapq.heappush(self._heap, (at, next(self._order), kind, node, payload))

    def _wake(self, at: float, node: int, version: int) -> None:
        self._push(at, _WAKE, node, version)

    def _arm(self) -> None:
        """Point the one timer at the earliest event."""
        at = self._heap[0][0] if self._heap else math.inf
        if at == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = at
        if at < math.inf:
            self._timer = self._loop.call_at(self._t0 + at, self._on_timer)

    def _on_timer(self) -> None:
        self._timer, self._timer_at = None, math.inf
        self._advance(self.now())
        self._arm()

    def _advance(self, now: float) -> None:
        """Run every event due by `now`, each at its own model time."""
        heap, nodes = self._heap, self.nodes
        while heap and heap[0][0] <= now:
            at, _, kind, index, payload = heapq.heappop(heap)
            self._last = at
            node = nodes[index]
            if kind == _AT_NODE:
                seq: Sequence = payload
                if seq.ended:
                    continue
                seq.at_node = at
                node.arrive(seq.rid, at)
            elif payload != node.version:
                continue  # a wake or tick of a run that was replanned since
            elif kind == _WAKE:
                node.wake(at)
            self._after(node, at)

    def _after(self, node: EmulatedNode, at: float) -> None:
        """Hand what the event produced to the sequences, and plan the next round's tick."""
        table = self.table
        for rid in table.resolved:
            seq = self._seqs.get(rid)
            if seq is None:
                continue  # a one-token answer: its first token was its end, already handled
            if not seq.produced:
                self._first_token(seq, at)
            if table.status[rid] == SERVED:
                self._finished(seq, at)
        table.resolved.clear()
        if not self._streams[node.index]:
            return
        for _, rid in node.decoding:
            seq = self._seqs[rid]
            if seq.stream:
                produced = self._produced(seq, at)
                if produced > seq.produced:
                    seq.push(produced, at)
        if node.phase == DECODE:
            j = math.floor((at - node.phase_start) / node.round_s + 1e-9) + 1
            armed = (node.version, j)
            if j < node.planned and self._armed[node.index] != armed:
                self._armed[node.index] = armed
                self._push(node.phase_start + j * node.round_s, _TICK, node.index, node.version)

    def _produced(self, seq: Sequence, at: float) -> int:
        """Tokens out of the node for decoding `seq` at `at` (not before the last event)."""
        node = self.nodes[seq.node]
        rounds = node.rounds
        if node.phase == DECODE:
            rounds += min(node.planned, math.floor((at - node.phase_start) / node.round_s + 1e-9))
        return min(seq.output, 1 + rounds - self.table.start_round[seq.rid])

    def _first_token(self, seq: Sequence, at: float) -> None:
        rid = seq.rid
        seq.cached_tokens = self.table.cached[rid]
        seq.ttft_s = self.table.ttft[rid]
        c = self.counters[seq.node][seq.model]
        c.prompt_tokens += seq.prompt_tokens
        c.cached_tokens += seq.cached_tokens
        assert seq.at_node is not None
        c.ttft.observe(at - seq.at_node)  # vLLM's TTFT: from arrival at the server
        seq.push(1, at)

    def _finished(self, seq: Sequence, at: float) -> None:
        seq.e2e_s = self.table.e2e[seq.rid]
        c = self.counters[seq.node][seq.model]
        c.generated_tokens += seq.output
        c.finished += 1
        assert seq.at_node is not None
        c.e2e.observe(at - seq.at_node)
        seq.push(seq.output, at)
        self._end(seq, ok=True)

    def _end(self, seq: Sequence, *, ok: bool) -> None:
        if self.on_end is not None:
            self.on_end(seq, ok)
        seq.ended = True
        if seq.stream:
            self._streams[seq.node] -= 1
        del self._seqs[seq.rid]
        self.table.release(seq.rid)

    # -- the API the HTTP layer uses ---------------------------------------------------------
    def submit(
        self,
        node: int,
        model: str,
        source_site: str,
        prompt_tokens: int,
        hashes: tuple[int, ...],
        output: int,
        *,
        stream: bool,
        source: str | None = None,
        received: float | None = None,
        prefilled: bool = False,
        ready_after_s: float = 0.0,
    ) -> Sequence:
        """A request for `model` from `source_site` (source `source`, when named) reaches the
        server of node `node`: at model time `received` (when its handler started, so the
        time spent reading and parsing its body is not added to its latency) or now. It is
        never placed before an event already run, which keeps the model causal.
        The caller has checked that the node serves the model, that a route joins the sites
        and that the sequence fits the node's KV (`kv_room`). A `prefilled` request (a split
        request's decode phase, issue #30) brings its prompt's KV from its prefill node: it
        reaches the node `ready_after_s` later (the transfer) and is admitted without
        prefilling, as the simulator's decode node admits one."""
        now = self.now()
        self._advance(now)
        if received is not None:
            now = min(now, max(received, self._last))
        sim_node = self.nodes[node]
        route = self.topology.routes[(source_site, self.topology.nodes[node].site)]
        m = self.fleet.model_index[model]
        half = route.rtt_s / 2.0
        rid = self.table.add(
            node=node,
            model=m,
            prompt=prompt_tokens,
            output=output,
            hashes=hashes,
            kv_need=(prompt_tokens + output) * self.fleet.kv_per_token[m],
            arrival=now,
            half_rtt=half,
        )
        self.table.prefilled[rid] = prefilled
        seq = Sequence(rid, node, m, prompt_tokens, output, stream, half)
        seq.source, seq.site, seq.hashes, seq.arrival = source, source_site, hashes, now
        self._seqs[rid] = seq
        if stream:
            self._streams[node] += 1
        sim_node.in_flight += 1
        if prefilled:  # published as running until admitted (`optimizer.sim.occupancy`)
            sim_node.expected.add(rid)
        else:
            sim_node.queued_tokens += prompt_tokens
        sim_node.sync()
        delay = half + PROMPT_BYTES_PER_TOKEN * prompt_tokens * route.s_per_byte
        delay = max(delay, ready_after_s)
        self._push(now + delay, _AT_NODE, node, seq)
        self._advance(self.now())
        self._arm()
        return seq

    def kv_transfer_s(self, prefill: int, decode: int, model: str, prompt_tokens: int) -> float:
        """A prompt's KV from node `prefill` to node `decode`: the link's RTT plus its bytes at
        the link's bandwidth (the decision's and the simulator's `Fleet.kv_*` columns)."""
        fleet = self.fleet
        a, b = fleet.node_site[prefill], fleet.node_site[decode]
        kv_bytes = prompt_tokens * fleet.kv_per_token[fleet.model_index[model]]
        return float(fleet.kv_rtt_s[a, b] + kv_bytes * fleet.kv_s_per_byte[a, b])

    def kv_room(self, node: int, model: str) -> int:
        """How many tokens a sequence of `model` may hold on `node` at most (its whole KV)."""
        return self.nodes[node].capacity // self.fleet.kv_per_token[self.fleet.model_index[model]]

    def cancel(self, seq: Sequence) -> None:
        """The client went away: free the sequence's batch slot and KV now (no-op once over)."""
        if seq.ended:
            return
        now = self.now()
        self._advance(now)
        if seq.ended:
            return
        node = self.nodes[seq.node]
        if seq.at_node is None:  # still on the network
            node.in_flight -= 1
            if self.table.prefilled[seq.rid]:  # a decode half: `submit` counted no prompt
                node.expected.discard(seq.rid)
            else:
                node.queued_tokens -= seq.prompt_tokens
            node.sync()
        else:
            if seq.produced:
                self.counters[seq.node][seq.model].generated_tokens += self._produced(seq, now)
            node.cancel(seq.rid, now)
        self._end(seq, ok=False)
        self._after(node, now)
        self._arm()

    def tokens(self, seq: Sequence) -> AsyncIterator[int]:
        """The count of tokens `seq`'s client has, each time it grows, when it would see it."""
        return seq.tokens(self._t0)

    async def finished(self, seq: Sequence) -> None:
        """Wait until the whole answer would reach the client."""
        async for _ in self.tokens(seq):
            pass

    # -- state for /metrics ------------------------------------------------------------------
    def engines(self, node: int) -> list[EngineState]:
        """What node `node`'s engine reports per served model now (vLLM's scheduler view:
        requests that reached it and wait, requests admitted, KV reserved)."""
        now = self.now()
        self._advance(now)
        self._arm()
        sim_node = self.nodes[node]
        table = self.table
        kv = sim_node.reserved / sim_node.capacity if sim_node.capacity else 0.0
        out = []
        for m in sim_node.models:
            running = sim_node.batch[m] + int(
                sim_node.current >= 0 and table.model[sim_node.current] == m
            )
            waiting = sum(1 for rid in sim_node.waiting if table.model[rid] == m)
            generating = sum(
                self._produced(self._seqs[rid], now)
                for _, rid in sim_node.decoding
                if table.model[rid] == m
            )
            out.append(
                EngineState(
                    model=self.topology.models[m].name,
                    running=running,
                    waiting=waiting,
                    kv_usage=kv,
                    counters=self.counters[node][m],
                    generating=generating,
                )
            )
        return out
