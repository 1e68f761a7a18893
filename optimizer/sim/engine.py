"""The discrete-event loop: arrivals are placed by a policy, nodes serve, operations interrupt."""

from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tqdm import tqdm

from optimizer.constraints import filter_candidates
from optimizer.decision import BLOCK_TOKENS, NodeView, PlacementRequest, node_view
from optimizer.estimates import PROMPT_BYTES_PER_TOKEN
from optimizer.policies.base import Policy
from optimizer.sim.node import SimNode
from optimizer.sim.requests import REJECTED, RequestTable
from optimizer.sim.schedule import ScheduledEvent
from optimizer.topology import Topology

# Event kinds. At equal times the heap orders by insertion, and heap events run before an
# arrival at the same instant, so an operation at time t governs the arrivals at t.
_AT_NODE, _WAKE, _OPERATION = 0, 1, 2
_PROGRESS_EVERY = 512


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
    ) -> None:
        self.topology = topology
        self.policy = policy
        self.requests = requests
        model_index = {m.name: i for i, m in enumerate(topology.models)}
        kv_per_token = {m.name: m.kv_bytes_per_token for m in topology.models}
        self.table = RequestTable(requests, arrival_s, model_index, kv_per_token)
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = itertools.count()
        self.nodes: list[SimNode] = []
        # views_by_model[m] lists every node's view for model m, in topology order, so the
        # constraint filter can name a reason for every node, serving or not.
        self.views_by_model: list[list[NodeView]] = [[] for _ in topology.models]
        for index, node in enumerate(topology.nodes):
            served: dict[int, NodeView] = {}
            for name, m in model_index.items():
                view = node_view(topology, node.name, name)
                if name in node.models:
                    served[m] = view
                self.views_by_model[m].append(view)
            block_bytes = {m: BLOCK_TOKENS * kv_per_token[topology.models[m].name] for m in served}
            self.nodes.append(SimNode(index, served, block_bytes, self.table, self._wake))
        self._node_by_name = {n.name: n for n in self.nodes}
        self._site = [node.site for node in topology.nodes]
        self._events = list(events)
        self.reject_reasons: Counter[str] = Counter()
        self.egress_bytes = [0] * len(requests)

    def _wake(self, at: float, node: int, version: int) -> None:
        heapq.heappush(self._heap, (at, next(self._seq), _WAKE, node, version))

    def place(self, rid: int, now: float) -> None:
        """Choose a node for request `rid` and send it there, or reject it."""
        request = self.requests[rid]
        table = self.table
        m = table.model[rid]
        candidates, rejected = filter_candidates(request, self.views_by_model[m], self.topology)
        if not candidates:
            table.status[rid] = REJECTED
            reasons = sorted(set(rejected.values()))
            table.reject_reason[rid] = ",".join(reasons)
            self.reject_reasons.update(reasons)
            return
        hashes = request.prefix_hashes
        by_name = self._node_by_name
        if hashes:
            for view in candidates:
                view.prefix_blocks = by_name[view.name].cache.match(m, hashes)
        node = by_name[candidates[self.policy.choose(request, candidates, self.topology)].name]
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
            for rid in node.fail(now):
                self.place(rid, now)
            return
        if event.action == "recover":
            node.state = "active"
        else:
            node.state = "draining" if event.action == "drain" else "cordoned"
        node.sync()

    def run(self, *, progress: bool = False, desc: str = "simulate") -> SimResult:
        """Replay every arrival to completion."""
        started = time.perf_counter()
        heap = self._heap
        for i, event in enumerate(self._events):
            heapq.heappush(heap, (event.at_s, next(self._seq), _OPERATION, i, 0))
        arrivals = self.table.arrival
        nodes = self.nodes
        n = len(arrivals)
        next_arrival = 0
        now = 0.0
        bar = tqdm(
            total=n, desc=desc, unit="req", disable=not progress, mininterval=0.5, leave=False
        )
        while True:
            upcoming = arrivals[next_arrival] if next_arrival < n else float("inf")
            if heap and heap[0][0] <= upcoming:
                now, _, kind, a, b = heapq.heappop(heap)
                if kind == _WAKE:
                    node = nodes[a]
                    if b == node.version:
                        node.wake(now)
                elif kind == _AT_NODE:
                    node = nodes[a]
                    if node.state == "down":
                        node.in_flight -= 1
                        node.queued_tokens -= self.table.prompt[b]
                        node.sync()
                        self.place(b, now)
                    else:
                        node.arrive(b, now)
                else:
                    self._operate(self._events[a], now)
            elif next_arrival < n:
                now = upcoming
                self.place(next_arrival, now)
                next_arrival += 1
                if next_arrival % _PROGRESS_EVERY == 0:
                    bar.update(_PROGRESS_EVERY)
            else:
                break
        bar.update(n - bar.n)
        bar.close()
        return SimResult(
            table=self.table,
            nodes=nodes,
            duration_s=now,
            wall_seconds=time.perf_counter() - started,
            reject_reasons=self.reject_reasons,
            egress_bytes=self.egress_bytes,
        )
