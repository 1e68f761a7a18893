"""A split request's KV on its way from its prefill node to its decode node (issue #30).

When a split request's prefill ends (`SimNode.wake` calls `handoff`), its KV (prompt tokens x
the model's `kv_bytes_per_token`) crosses to the decode node's site after the link's RTT, at
its bandwidth: `Fleet.kv_rtt_s` and `Fleet.kv_s_per_byte`, the figures the decision's split
stage estimates with, so the simulator and the decision price the same transfer. Egress is
paid on the KV bytes between two sites. On arrival the prefill node frees the prompt's KV and
the decode node queues the request, prefilled. The decode node counts the request from the
decision on (it is expected there, among its running sequences: `optimizer.sim.occupancy`),
so a request that will never reach it (its prefill node failed, or the decode node did) is
taken off with `unexpect`.
"""

from __future__ import annotations

from collections.abc import Callable

from optimizer.decide.state.estimates import PROMPT_BYTES_PER_TOKEN
from optimizer.decide.state.fleet import Fleet
from optimizer.sim.node import SimNode
from optimizer.sim.requests import RequestTable

# Event kinds: a prompt reaching its node, and a KV arrival (optimizer.sim.engine numbers
# the others around them).
AT_NODE, KV_ARRIVES = 0, 3


class KvTransfers:
    """Hands split requests from prefill nodes to decode nodes."""

    def __init__(
        self,
        fleet: Fleet,
        table: RequestTable,
        nodes: list[SimNode],
        egress_bytes: list[int],
        push: Callable[[float, int, int, int], None],
    ) -> None:
        """`nodes`: the simulator's nodes (filled after this is made: each takes `handoff`);
        `push(at, kind, node, rid)`: queue an event."""
        self.fleet = fleet
        self.table = table
        self.nodes = nodes
        self.egress_bytes = egress_bytes
        self._push = push
        topology = fleet.topology
        self._routes = topology.routes
        self._site = [node.site for node in topology.nodes]

    def send(self, rid: int, decode: int, prefill: int, now: float) -> None:
        """Send split request `rid`'s prompt to node `prefill`, as a one-node request's goes
        to its node (`Simulator.send`), and tell node `decode` to expect it; its first and
        last tokens go back to the source from the decode node."""
        table = self.table
        request = table.requests[rid]
        source = request.source_site
        table.node[rid] = decode
        table.prefill_node[rid] = prefill
        table.prefilled[rid] = False
        table.half_rtt[rid] = self._routes[(source, self._site[decode])].rtt_s / 2.0
        expecting = self.nodes[decode]
        expecting.in_flight += 1
        expecting.expected.add(rid)  # published as running, not queued (`optimizer.sim.occupancy`)
        expecting.sync()
        node = self.nodes[prefill]
        route = self._routes[(source, self._site[prefill])]
        prompt_bytes = PROMPT_BYTES_PER_TOKEN * request.prompt_tokens
        if self._site[prefill] != source:
            table.cost[rid] += prompt_bytes * route.egress_usd_per_byte
            self.egress_bytes[rid] += prompt_bytes
        node.in_flight += 1
        node.queued_tokens += request.prompt_tokens
        node.sync()
        delay = route.rtt_s / 2.0 + prompt_bytes * route.s_per_byte
        self._push(now + delay, AT_NODE, prefill, rid)

    def handoff(self, rid: int, prefill: int, now: float) -> None:
        """Request `rid`'s prefill ended on node `prefill`: send its KV to its decode node."""
        table, fleet = self.table, self.fleet
        decode = table.node[rid]
        a, b = fleet.node_site[prefill], fleet.node_site[decode]
        kv_bytes = table.kv_prompt[rid]
        table.handed_off[rid] = now
        if a != b:
            link = self._routes[(self._site[prefill], self._site[decode])]
            table.cost[rid] += kv_bytes * link.egress_usd_per_byte
            self.egress_bytes[rid] += kv_bytes
        delay = float(fleet.kv_rtt_s[a, b] + kv_bytes * fleet.kv_s_per_byte[a, b])
        self._push(now + delay, KV_ARRIVES, decode, rid)

    def arrived(self, rid: int, now: float) -> bool:
        """Request `rid`'s KV reached its decode node, which queues it; False when the decode
        node went down meanwhile (the caller places the request again). A request lost with
        its prefill node (marked failed when it went down, `SimNode.fail`) is dropped here
        (True: nothing is left to do)."""
        table = self.table
        prefill = self.nodes[table.prefill_node[rid]]
        decode = self.nodes[table.node[rid]]
        if rid not in prefill.handing:  # the prefill node failed: the request was lost
            self.unexpect(rid)
            return True
        prefill.release(rid, now)
        if decode.state == "down":
            self.unexpect(rid)
            return False
        table.prefilled[rid] = True
        decode.arrive(rid, now)
        return True

    def lost(self, prefill: int, rids: list[int]) -> list[int]:
        """Node `prefill` failed with `rids[0]` prefilling (-1: none) and `rids[1:]` queued:
        their decode nodes no longer expect the split ones; the queued ones are returned for
        the caller to place again."""
        table = self.table
        for rid in rids:
            if rid >= 0 and table.prefill_node[rid] == prefill:
                self.unexpect(rid)
        return rids[1:]

    def unexpect(self, rid: int) -> None:
        """A split request will not reach the decode node that expects it."""
        decode = self.nodes[self.table.node[rid]]
        decode.in_flight -= 1
        decode.expected.discard(rid)
        decode.sync()
