"""The discrete-event loop: arrivals are placed by a policy, nodes serve, operations interrupt.

This is the simulator's data plane: the event heap and its clock, each request's way over the
network to its node (and its egress), the nodes (`optimizer.sim.node`), split requests' KV
transfers (`optimizer.sim.split`), scheduled operations and telemetry scrapes. Whenever a
request needs a node it asks the control plane, `optimizer.sim.placer.Placer` (the pipeline,
what each decider sees, breakers, rejections), and tells it what was sent.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from optimizer.decide.filters.breakers import BreakerConfig
from optimizer.decide.framework import Splitter
from optimizer.decide.request import PlacementRequest
from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.estimates import PROMPT_BYTES_PER_TOKEN
from optimizer.decide.state.fleet import DYNAMIC_COLUMNS, STATE_CODES, Fleet
from optimizer.decide.state.prefix import PrefixIndex
from optimizer.sim.deciders import Deciders
from optimizer.sim.interference import ChunkedPrefill
from optimizer.sim.node import SimNode
from optimizer.sim.placer import Placer
from optimizer.sim.requests import RequestTable
from optimizer.sim.schedule import ScheduledEvent
from optimizer.sim.split import KV_ARRIVES as _KV
from optimizer.sim.split import KvTransfers
from optimizer.sim.telemetry import TelemetryModel
from optimizer.topology import Topology

# Event kinds. At equal times the heap orders by insertion, and heap events run before an
# arrival at the same instant, so an operation at time t governs the arrivals at t.
_AT_NODE, _WAKE, _OPERATION, _SCRAPE, _DELIVER = 0, 1, 2, 4, 5  # 3: optimizer.sim.split
_PROGRESS_EVERY = 512
DOWN = STATE_CODES["down"]


@dataclass(frozen=True, slots=True)
class SimResult:
    """What a run produced: the request table, the nodes, and how long it took."""

    table: RequestTable
    nodes: list[SimNode]
    duration_s: float
    wall_seconds: float
    reject_reasons: Counter[str]
    egress_bytes: list[int]


class Simulator:
    """One run of one policy over one list of arrivals (ids are indices into `requests`)."""

    def __init__(
        self,
        topology: Topology,
        policy: Policy,
        requests: Sequence[PlacementRequest],
        arrival_s: Sequence[float],
        events: Sequence[ScheduledEvent] = (),
        telemetry: TelemetryModel | None = None,
        breakers: BreakerConfig | None = None,
        stale_after_s: float | None = None,
        deciders: Deciders | None = None,
        splitter: Splitter | None = None,
        chunked_prefill: ChunkedPrefill | None = None,
    ) -> None:
        """`telemetry`: policies see node state as the live engine does, through samples
        taken as that model says (`optimizer.sim.telemetry`); None: the exact state.
        `breakers`: per-node circuit breakers as the live engine runs them, fed with this
        run's outcomes on its clock (None: none); `stale_after_s`: leave out nodes whose
        sample is older, as the live engine does (needs `telemetry`; None: never).
        `deciders`: which of several deciders places each request, each with its own view
        unless shared (`optimizer.sim.deciders`; needs `telemetry`; None: one decider).
        `splitter`: the pipeline's split stage, which may send a request's prefill and decode
        to two nodes (`optimizer.decide.pickers.split`; None: one node each).
        `chunked_prefill`: nodes that run both phases interleave them in steps with a token
        budget (`optimizer.sim.interference`; None: a prefill runs alone, stalling decode)."""
        self.topology = topology
        self.policy = policy
        self.requests = requests
        self.fleet = Fleet(topology)
        model_index = self.fleet.model_index
        kv_per_token = {m.name: m.kv_bytes_per_token for m in topology.models}
        self.table = RequestTable(requests, arrival_s, model_index, kv_per_token)
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = itertools.count()
        # The exact state of every node, in the kernel's dynamic columns (SimNode.sync).
        self.dynamic = np.zeros((self.fleet.size, DYNAMIC_COLUMNS), dtype=np.float64)
        self.prefix = PrefixIndex(self.fleet.size, indexed=False)
        self.nodes: list[SimNode] = []
        self.egress_bytes = [0] * len(requests)
        # Split requests' KV between their two nodes (its `handoff` is the nodes' callback).
        self.kv = KvTransfers(self.fleet, self.table, self.nodes, self.egress_bytes, self._push)
        fleet, dynamic, table, handoff = self.fleet, self.dynamic, self.table, self.kv.handoff
        chunks: list[int | None] = (
            list(chunked_prefill.node_budgets(topology))
            if chunked_prefill is not None
            else [None] * fleet.size
        )
        self.nodes.extend(
            SimNode(
                i, fleet, dynamic, self.prefix.cache_of(i), table, self._wake, handoff, chunks[i]
            )
            for i in range(fleet.size)
        )
        self.placer = Placer(
            fleet,
            table,
            policy,
            (dynamic, self.prefix),
            self._clock,
            telemetry=telemetry,
            breakers=breakers,
            stale_after_s=stale_after_s,
            deciders=deciders,
            splitter=splitter,
        )
        # The control plane's parts the loop and its callers (the RL environment, tests) use.
        self.deciders = self.placer.deciders
        self.telemetry = self.placer.telemetry
        self.breakers = self.placer.breakers
        self.pipeline = self.placer.pipeline
        self.reject_reasons = self.placer.reject_reasons
        self._stale_filter = stale_after_s is not None
        self._node_by_name = {n.name: n for n in self.nodes}
        self._site = [node.site for node in topology.nodes]
        self._events = list(events)
        self.now = 0.0
        self.next_arrival = 0

    def _wake(self, at: float, node: int, version: int) -> None:
        heapq.heappush(self._heap, (at, next(self._seq), _WAKE, node, version))

    def _clock(self) -> float:
        return self.now

    def place(self, rid: int, now: float) -> None:
        """Choose a node for request `rid` with the pipeline and send it there, or reject it."""
        choice = self.placer.decide(rid, self.requests[rid], now)
        if choice is not None:
            self.send(rid, choice[0], now, choice[1])

    def candidates(self, rid: int) -> Candidates:
        """The nodes that may serve request `rid` as the policy sees them (the exact state,
        or the telemetry model's); when there are none the request is marked rejected."""
        return self.placer.candidates(rid, self.requests[rid], self.now)

    def send(self, rid: int, node_index: int, now: float, prefill: int | None = None) -> None:
        """Send request `rid` to node `node_index` (one of its candidates), or, when
        `prefill` names a node, its prompt there and its decode to `node_index` (`kv.send`)."""
        request = self.requests[rid]
        table = self.table
        node = self.nodes[node_index]
        self.placer.sent(rid, request, node_index, prefill)
        if prefill is not None:
            self.kv.send(rid, node_index, prefill, now)
            return
        table.prefill_node[rid] = -1
        # A split request's decode half placed again (its decode node failed before admitting
        # it) arrives as a whole request: the prompt's KV it was sent lived on that node and
        # died with it, so it is prefilled again where it lands (the prompt's blocks may still
        # be cached on its old prefill node, which the prefix cache then finds; issue #30).
        table.prefilled[rid] = False
        site = self._site[node.index]
        route = self.topology.routes[(request.source_site, site)]
        prompt_bytes = PROMPT_BYTES_PER_TOKEN * request.prompt_tokens
        table.node[rid] = node.index
        table.half_rtt[rid] = route.rtt_s / 2.0
        if site != request.source_site:
            table.cost[rid] += prompt_bytes * route.egress_usd_per_byte
            self.egress_bytes[rid] += prompt_bytes
        node.in_flight += 1
        node.queued_tokens += request.prompt_tokens
        node.sync()
        # The prompt reaches the node after half the RTT plus its transfer over the link.
        delay = route.rtt_s / 2.0 + prompt_bytes * route.s_per_byte
        heapq.heappush(self._heap, (now + delay, next(self._seq), _AT_NODE, node.index, rid))

    def _operate(self, event: ScheduledEvent, now: float) -> None:
        node = self._node_by_name[event.node]
        if event.action == "fail":
            current = node.current
            requeue = node.fail(now)
            for rid in self.kv.lost(node.index, [current, *requeue]):
                self.place(rid, now)
            return
        if event.action == "recover":
            node.state = "active"
        else:
            node.state = "draining" if event.action == "drain" else "cordoned"
        node.sync()

    def start(self) -> None:
        """Queue the scheduled operations and the first scrape; call once before `advance`."""
        for i, event in enumerate(self._events):
            heapq.heappush(self._heap, (event.at_s, next(self._seq), _OPERATION, i, 0))
        if self.telemetry is not None:
            self._push(self.telemetry.first_scrape_s(), _SCRAPE, 0, 0)

    def _push(self, at: float, kind: int, a: int, b: int) -> None:
        heapq.heappush(self._heap, (at, next(self._seq), kind, a, b))

    def _scrape(self, now: float) -> None:
        """Take the fleet's samples now; they reach the policy's view after the delay."""
        telemetry = self.telemetry
        assert telemetry is not None
        answering = self.fleet.state != DOWN if self._stale_filter else None
        batch = telemetry.take(self.dynamic, now, answering)
        self._push(now + telemetry.delay_s(), _DELIVER, batch, 0)
        self._push(now + telemetry.next_interval_s(), _SCRAPE, 0, 0)

    def advance(self, until: float = float("inf")) -> int | None:
        """Run every event up to the next arrival (or `until`, whichever is first) and return
        the id of the arriving request, now due for placement (`self.now` is its arrival
        time); None when no arrival is left before `until`. The caller places it, with
        `place` or with `candidates` and `send`, before advancing again. This is the
        step-able form of `run`, used by the RL environment to take one decision a step."""
        heap = self._heap
        arrivals = self.table.arrival
        nodes = self.nodes
        n = len(arrivals)
        while True:
            upcoming = arrivals[self.next_arrival] if self.next_arrival < n else float("inf")
            if heap and heap[0][0] <= upcoming and heap[0][0] <= until:
                at, _, kind, a, b = heapq.heappop(heap)
                if kind >= _SCRAPE and self.next_arrival >= n:
                    continue  # no decision is left to inform: telemetry stops
                self.now = at
                if kind == _WAKE:
                    node = nodes[a]
                    if b == node.version:
                        node.wake(self.now)
                elif kind == _AT_NODE:
                    node = nodes[a]
                    if node.state == "down":
                        if self.breakers is not None:  # the prompt found the node down
                            self.breakers.record(node.name, False)
                        node.in_flight -= 1
                        node.queued_tokens -= self.table.prompt[b]
                        node.sync()
                        if self.table.prefill_node[b] == a:
                            self.kv.unexpect(b)
                        self.place(b, self.now)
                    else:
                        node.arrive(b, self.now)
                elif kind == _OPERATION:
                    self._operate(self._events[a], self.now)
                elif kind == _KV:
                    if not self.kv.arrived(b, self.now):
                        self.place(b, self.now)
                elif kind == _SCRAPE:
                    self._scrape(self.now)
                else:
                    assert self.telemetry is not None
                    self.telemetry.deliver(a)
            elif self.next_arrival < n and upcoming <= until:
                self.now = upcoming
                self.next_arrival += 1
                return self.next_arrival - 1
            else:
                return None

    def result(self, started: float) -> SimResult:
        """The run's result so far; `started` is the `time.perf_counter()` of its start."""
        return SimResult(
            table=self.table,
            nodes=self.nodes,
            duration_s=self.now,
            wall_seconds=time.perf_counter() - started,
            reject_reasons=self.reject_reasons,
            egress_bytes=self.egress_bytes,
        )

    def run(self, *, progress: bool = False, desc: str = "simulate") -> SimResult:
        """Replay every arrival to completion."""
        started = time.perf_counter()
        self.start()
        n = len(self.table.arrival)
        bar = tqdm(
            total=n, desc=desc, unit="req", disable=not progress, mininterval=0.5, leave=False
        )
        while (rid := self.advance()) is not None:
            self.place(rid, self.now)
            if (rid + 1) % _PROGRESS_EVERY == 0:
                bar.update(_PROGRESS_EVERY)
        bar.update(n - bar.n)
        bar.close()
        return self.result(started)
