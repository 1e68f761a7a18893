"""The fleet as a struct of arrays: what never changes between two topology refreshes.

Built once per topology (the simulator's run, the engine's snapshot), never per request:
- per model m, a float64 matrix `static[m]` of shape (nodes, STATIC_COLUMNS) in topology order:
  gpus, USD/h, KV capacity, batch limit and prefill rate (both scaled by `gpus`, docs/contracts.md
  §1), decode step ms and per-sequence ms, KV bytes per token, tier index, site index; and
  `served[m]`, whether the node runs m with a profile;
- per source site, a (nodes, ROUTE_COLUMNS) matrix of the route to each node's site: RTT,
  seconds per byte, egress USD per byte, same site; NaN RTT where unreachable;
- per node, its state code (the simulator changes it with operations; `set_state`) and its
  role (`mixed`, `prefill`, `decode`: which phases it runs, issue #30), and per pair of sites
  the RTT and seconds per byte a prefill node's KV takes to reach a decode node
  (`kv_rtt_s`, `kv_s_per_byte`: the link's, or `INTRA_SITE_KV_GBPS` within a site).

The hard constraints that do not depend on a request's lengths (model, state, residency,
reachability) are resolved once per (model, source site, residency) into `StaticSplit`, so a
decision only checks the KV room of the survivors (`optimizer.decide.filters.constraints`). Reason
strings and their precedence are `optimizer.constraints`' (docs/contracts.md §1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from optimizer.topology import TIERS, Topology

# The fixed vocabulary of rejection reasons; the live engine adds its own (for example
# 'stale_telemetry', 'breaker_open') on top.
REASON_MODEL_NOT_SERVED = "model_not_served"
REASON_NODE_DOWN = "node_down"
REASON_NODE_DRAINING = "node_draining"
REASON_NODE_CORDONED = "node_cordoned"
REASON_RESIDENCY = "residency"
REASON_UNREACHABLE = "unreachable"
REASON_NO_KV_ROOM = "no_kv_room"
# A node whose role keeps it out of a one-node (both phases) answer; it may still take its
# own phase of a split one (`optimizer.decide.filters.roles`).
REASON_PREFILL_ONLY = "prefill_only"
REASON_DECODE_ONLY = "decode_only"
ROLE_CODES: dict[str, int] = {"mixed": 0, "prefill": 1, "decode": 2}
# Why a node of each role code cannot give a one-node answer ("": it can).
ROLE_REASONS: tuple[str, ...] = ("", REASON_PREFILL_ONLY, REASON_DECODE_ONLY)
# KV moves between two nodes of one site over the cluster's RDMA fabric, not a topology link
# (topology links join sites; within a site a prompt's bytes are free, docs/contracts.md §1).
# 200 Gb/s is one NIC of the InfiniBand/RoCE fabrics llm-d's P/D guide was validated on
# (llm-d guides/pd-disaggregation: 8xH200 with InfiniBand or RoCE; NIXL moves the KV).
INTRA_SITE_KV_GBPS = 200.0
# Static columns (float64).
S_GPUS, S_USD_PER_HOUR, S_KV_CAPACITY, S_MAX_BATCH, S_PREFILL_RATE = 0, 1, 2, 3, 4
S_STEP_MS, S_STEP_MS_PER_SEQ, S_KV_PER_TOKEN, S_TIER, S_SITE = 5, 6, 7, 8, 9
STATIC_COLUMNS = 10
# Route columns (float64), per source site.
R_RTT_S, R_S_PER_BYTE, R_EGRESS_PER_BYTE, R_SAME_SITE = 0, 1, 2, 3
ROUTE_COLUMNS = 4
# Dynamic columns (float64): what the simulator or the live engine's telemetry says of a node.
D_QUEUE, D_RUNNING, D_KV_USED, D_QUEUED_TOKENS = 0, 1, 2, 3
DYNAMIC_COLUMNS = 4

STATE_CODES: dict[str, int] = {"active": 0, "down": 1, "draining": 2, "cordoned": 3}
# Reason codes index REASONS; 0 is "may serve". The order is rejection_reason's precedence.
REASONS: tuple[str, ...] = (
    "",
    REASON_MODEL_NOT_SERVED,
    REASON_NODE_DOWN,
    REASON_NODE_DRAINING,
    REASON_NODE_CORDONED,
    REASON_RESIDENCY,
    REASON_UNREACHABLE,
    REASON_NO_KV_ROOM,
)
CODE_MODEL_NOT_SERVED = 1
CODE_RESIDENCY = 5
CODE_UNREACHABLE = 6
CODE_NO_KV_ROOM = 7
_STATE_REASON_CODE = np.array([0, 2, 3, 4], dtype=np.int8)  # indexed by state code


@dataclass(frozen=True, slots=True)
class PoolRows:
    """What the split stage (`optimizer.decide.pickers.split`) reads of a pool's static
    columns: every node's static and route rows, half its route's RTT (the first token's way
    back), its site, and the positions in the pool of the nodes that may prefill and of those
    that may decode; for the decode nodes, their batch limits, halved RTTs and sites. Gathered
    once per `StaticSplit`, so a decision only reads them (numpy's fixed cost per call is most
    of a small pool's)."""

    static: np.ndarray
    routes: np.ndarray
    back_s: np.ndarray
    sites: np.ndarray
    prefill_at: np.ndarray
    decode_at: np.ndarray
    decode_max_batch: np.ndarray
    decode_back_s: np.ndarray
    decode_sites: np.ndarray


@dataclass(frozen=True, slots=True)
class StaticSplit:
    """The constraints of one (model, source site, residency) that ignore the request's
    lengths: `codes` (nodes,) reason codes, `index` the nodes passing them (topology order),
    `capacity` their KV room in bytes, `rejected` name -> reason, and their static and route
    rows gathered once (`Candidates` reuses them when every one of them is a candidate), in
    column-major order: a decision reads them column by column, and numpy's loops over a
    contiguous column run about twice as fast as over a strided one.
    `min_capacity` is the smallest of `capacity` (infinity when no node passes): a request
    needing no more fits on every one of them, which the constraints filter then knows with
    one float comparison instead of two array operations. For the split stage
    (`optimizer.decide.pickers.split`), when every one of them is in its pool: `pool`, its
    static rows of them."""

    codes: np.ndarray
    index: np.ndarray
    capacity: np.ndarray
    rejected: dict[str, str]
    static: np.ndarray
    routes: np.ndarray
    min_capacity: float
    pool: PoolRows


class Fleet:
    """Static columns and route matrices of one topology (see the module docstring)."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        nodes = topology.nodes
        self.names: list[str] = [n.name for n in nodes]
        self.index_of: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self.model_index: dict[str, int] = {m.name: i for i, m in enumerate(topology.models)}
        self.site_index: dict[str, int] = {s.name: i for i, s in enumerate(topology.sites)}
        self.kv_per_token: list[int] = [m.kv_bytes_per_token for m in topology.models]
        self.size = len(nodes)
        tier_index = {t: i for i, t in enumerate(TIERS)}
        jurisdictions = {s.name: s.jurisdiction for s in topology.sites}
        self.node_jurisdiction = [jurisdictions[n.site] for n in nodes]
        self.node_site = np.array([self.site_index[n.site] for n in nodes], dtype=np.int64)
        self.state = np.array([STATE_CODES[n.state] for n in nodes], dtype=np.int8)
        self.role = np.array([ROLE_CODES[n.role] for n in nodes], dtype=np.int8)
        # Whether any node runs one phase only: the decision then keeps those nodes out of
        # one-node answers (a fleet of mixed nodes pays nothing for roles).
        self.has_roles = bool(np.count_nonzero(self.role))
        self.mixed = self.role == ROLE_CODES["mixed"]
        self.can_prefill = self.role != ROLE_CODES["decode"]
        self.can_decode = self.role != ROLE_CODES["prefill"]
        self.kv_rtt_s, self.kv_s_per_byte = _kv_routes(topology)
        self.static: list[np.ndarray] = []
        self.served: list[np.ndarray] = []
        for model in topology.models:
            table = np.zeros((self.size, STATIC_COLUMNS), dtype=np.float64)
            served = np.zeros(self.size, dtype=bool)
            for i, node in enumerate(nodes):
                profile = topology.profile_by_key.get((model.name, node.accelerator))
                ok = profile is not None and model.name in node.models
                served[i] = ok
                table[i, S_GPUS] = node.gpus
                table[i, S_USD_PER_HOUR] = node.usd_per_hour
                table[i, S_KV_CAPACITY] = topology.kv_capacity_bytes(node)
                table[i, S_KV_PER_TOKEN] = model.kv_bytes_per_token
                table[i, S_TIER] = tier_index[topology.site_by_name[node.site].tier]
                table[i, S_SITE] = self.node_site[i]
                if ok and profile is not None:
                    table[i, S_MAX_BATCH] = profile.max_batch * node.gpus
                    table[i, S_PREFILL_RATE] = profile.prefill_tokens_per_s * node.gpus
                    table[i, S_STEP_MS] = profile.decode_step_ms
                    table[i, S_STEP_MS_PER_SEQ] = profile.decode_step_ms_per_seq
            table.flags.writeable = False
            self.static.append(table)
            self.served.append(served)
        self._routes: dict[str, np.ndarray] = {}
        self._splits: dict[tuple[int, str, str | None], StaticSplit] = {}

    def set_state(self, node: int, state: str) -> None:
        """A node's operational state changed (the simulator's drain/cordon/fail/recover)."""
        code = STATE_CODES[state]
        if self.state[node] != code:
            self.state[node] = code
            self._splits.clear()

    def routes_from(self, source_site: str) -> np.ndarray:
        """(nodes, ROUTE_COLUMNS) route terms from `source_site` to each node's site; the RTT
        is NaN where no link joins them (`Topology.routes` has no entry)."""
        table = self._routes.get(source_site)
        if table is None:
            routes = self.topology.routes
            table = np.zeros((self.size, ROUTE_COLUMNS), dtype=np.float64)
            for i, node in enumerate(self.topology.nodes):
                route = routes.get((source_site, node.site))
                if route is None:
                    table[i, R_RTT_S] = np.nan
                    continue
                table[i, R_RTT_S] = route.rtt_s
                table[i, R_S_PER_BYTE] = route.s_per_byte
                table[i, R_EGRESS_PER_BYTE] = route.egress_usd_per_byte
                table[i, R_SAME_SITE] = float(node.site == source_site)
            table.flags.writeable = False
            self._routes[source_site] = table
        return table

    def split(self, model: int, source_site: str, residency: str | None) -> StaticSplit:
        """The length-independent constraints for requests of this kind (cached until a
        node's state changes)."""
        key = (model, source_site, residency)
        split = self._splits.get(key)
        if split is None:
            split = self._splits[key] = self._build_split(model, source_site, residency)
        return split

    def _build_split(self, model: int, source_site: str, residency: str | None) -> StaticSplit:
        # Assigned from the lowest precedence up, so the first reason that applies wins.
        codes = np.zeros(self.size, dtype=np.int8)
        codes[np.isnan(self.routes_from(source_site)[:, R_RTT_S])] = CODE_UNREACHABLE
        if residency is not None:
            wrong = np.array([j != residency for j in self.node_jurisdiction], dtype=bool)
            codes[wrong] = CODE_RESIDENCY
        state_codes = _STATE_REASON_CODE[self.state]
        codes = np.where(state_codes > 0, state_codes, codes).astype(np.int8)
        codes[~self.served[model]] = CODE_MODEL_NOT_SERVED
        index = np.flatnonzero(codes == 0)
        static = np.asfortranarray(self.static[model][index])
        routes = np.asfortranarray(self.routes_from(source_site)[index])
        rejected = {self.names[i]: REASONS[c] for i, c in enumerate(codes.tolist()) if c}
        capacity = static[:, S_KV_CAPACITY]
        least = float(capacity.min()) if len(capacity) else math.inf
        return StaticSplit(
            codes,
            index,
            capacity,
            rejected,
            static,
            routes,
            least,
            self.pool_rows(index, static, routes),
        )

    def pool_rows(self, pool: np.ndarray, static: np.ndarray, routes: np.ndarray) -> PoolRows:
        """`PoolRows` of the nodes `pool` (ascending), whose static and route rows are given."""
        sites = self.node_site.take(pool)
        d_at = np.flatnonzero(self.can_decode[pool])
        back = routes[:, R_RTT_S] / 2
        return PoolRows(
            static,
            routes,
            back,
            sites,
            np.flatnonzero(self.can_prefill[pool]),
            d_at,
            static[:, S_MAX_BATCH].take(d_at),
            back.take(d_at),
            sites.take(d_at),
        )


def _kv_routes(topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """(sites, sites) RTT seconds (NaN where no link joins two sites) and seconds per byte of
    a KV transfer between sites: the link's bandwidth, `INTRA_SITE_KV_GBPS` within a site."""
    index = {s.name: i for i, s in enumerate(topology.sites)}
    n = len(index)
    rtt = np.full((n, n), np.nan, dtype=np.float64)
    per_byte = np.zeros((n, n), dtype=np.float64)
    for (a, b), route in topology.routes.items():
        i, j = index[a], index[b]
        rtt[i, j] = route.rtt_s
        per_byte[i, j] = route.s_per_byte if a != b else 8.0 / (INTRA_SITE_KV_GBPS * 1e9)
    rtt.flags.writeable = False
    per_byte.flags.writeable = False
    return rtt, per_byte
