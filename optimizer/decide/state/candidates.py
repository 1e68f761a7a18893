"""One request's candidates as columns, with the estimates and feature rows computed on them.

The filters (`optimizer.decide.filters`) choose the node indices; `Candidates` gathers the
survivors' static, route and dynamic columns in one fancy-index each and computes, on first use,
the prefix match, the estimates (`optimizer.estimates`' formulas, in the same order of operations,
so the numbers are the same to the last bit) and the feature rows (`optimizer.features`'
definition). Policies read these columns (`optimizer.decide.scorers`); the per-node originals stay
as the reference the parity tests and `bench-decide` compare against.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optimizer.decide.request import PlacementRequest, slo_targets_s
from optimizer.decide.state.estimates import Estimates
from optimizer.decide.state.features import MAX_RATIO, N_FEATURES
from optimizer.decide.state.fleet import (
    D_KV_USED,
    D_QUEUE,
    D_RUNNING,
    DYNAMIC_COLUMNS,
    S_KV_CAPACITY,
    S_MAX_BATCH,
    S_PREFILL_RATE,
    S_STEP_MS,
    S_TIER,
    S_USD_PER_HOUR,
    Fleet,
    StaticSplit,
)
from optimizer.decide.state.prefix import PrefixIndex, PrefixMatch
from optimizer.decision import NodeView
from optimizer.topology import Topology

_TIER_COLUMN = 22  # optimizer.features: the first of the tier one-hot columns


class Candidates:
    """The candidates of one request: node indices and their gathered columns."""

    __slots__ = (
        "fleet",
        "request",
        "index",
        "static",
        "dynamic",
        "_prefix",
        "_match",
        "_routes",
        "_blocks",
        "_est",
        "_rows",
        "_targets",
    )

    def __init__(
        self,
        fleet: Fleet,
        request: PlacementRequest,
        index: np.ndarray,
        dynamic: np.ndarray,
        prefix: PrefixIndex | None = None,
        prefix_blocks: np.ndarray | None = None,
        split: StaticSplit | None = None,
    ) -> None:
        """`index`: the candidates' node indices, ascending (topology order); `dynamic`: the
        whole fleet's (nodes, DYNAMIC_COLUMNS) state; `prefix`: the fleet's prefix caches to
        match the request's blocks in (None: none known), unless `prefix_blocks` gives the
        matches directly; `split`: the `StaticSplit` `index` came from
        (`optimizer.decide.filters.constraints`), whose
        gathered rows serve when `index` is all of it."""
        self.fleet = fleet
        self.request = request
        self.index = index
        self.dynamic = dynamic[index]
        self._prefix = prefix
        self._match: PrefixMatch | None = None
        self._routes: np.ndarray | None = None
        if split is not None and index is split.index:
            self.static = split.static
            self._routes = split.routes
        else:
            self.static = fleet.static[fleet.model_index[request.model]][index]
        self._blocks = prefix_blocks
        self._est: Estimates | None = None
        self._rows: np.ndarray | None = None
        self._targets: tuple[float, float] | None = None

    def __len__(self) -> int:
        return len(self.index)

    @property
    def names(self) -> list[str]:
        names = self.fleet.names
        return [names[i] for i in self.index.tolist()]

    @property
    def routes(self) -> np.ndarray:
        if self._routes is None:
            self._routes = self.fleet.routes_from(self.request.source_site)[self.index]
        return self._routes

    @property
    def prefix_blocks(self) -> np.ndarray:
        """Leading blocks of the request's prefix hashes cached on each candidate."""
        if self._blocks is None:
            hashes = self.request.prefix_hashes
            if not hashes or self._prefix is None:
                self._blocks = np.zeros(len(self.index), dtype=np.float64)
            else:
                self._blocks = self.prefix_match(self._prefix).on(self.index)
        return self._blocks

    def prefix_match(self, prefix: PrefixIndex) -> PrefixMatch:
        """The request's prefix hashes (at least one) matched on `prefix`: these candidates'
        own match when `prefix` is theirs, which other node sets of the decision share (the
        split stage's prefill pool), else a new one."""
        if prefix is not self._prefix:
            model = self.fleet.model_index[self.request.model]
            return PrefixMatch(prefix, model, self.request.prefix_hashes)
        if self._match is None:
            model = self.fleet.model_index[self.request.model]
            self._match = PrefixMatch(prefix, model, self.request.prefix_hashes)
        return self._match

    @property
    def est(self) -> Estimates:
        if self._est is None:
            request = self.request
            blocks = self.prefix_blocks if request.prefix_hashes else None
            self._est = Estimates(request, self.static, self.dynamic, self.routes, blocks)
        return self._est

    @property
    def estimated(self) -> Estimates | None:
        """The estimates when something computed them already, else None (never computes)."""
        return self._est

    @property
    def targets(self) -> tuple[float, float]:
        """The request's (TTFT, E2E) targets in seconds (`estimates.slo_targets_s`)."""
        if self._targets is None:
            self._targets = slo_targets_s(self.request, self.fleet.topology)
        return self._targets

    def rows(self) -> np.ndarray:
        """The (candidates, N_FEATURES) float32 rows of `features.candidate_rows` (a
        column-major array)."""
        if self._rows is not None:
            return self._rows
        n = len(self.index)
        # Filled column by column into a (features, n) array, whose transpose is returned:
        # each column is then one contiguous write instead of a strided one.
        cols = np.zeros((N_FEATURES, n), dtype=np.float32)
        self._rows = rows = cols.T
        if n == 0:
            return rows
        request = self.request
        ttft_target, e2e_target = self.targets
        cols[0] = request.prompt_tokens / 1000.0
        cols[1] = request.max_output_tokens / 1000.0
        cols[2] = ttft_target
        cols[3] = e2e_target / 60.0
        cols[4] = float(request.residency is not None)
        est = self.est
        cols[5] = est.ttft_s
        cols[6] = est.e2e_s / 60.0
        cols[7] = est.wait_s
        cols[8] = est.prefill_s
        cols[9] = np.minimum(est.ttft_s / ttft_target, MAX_RATIO)
        cols[10] = np.minimum(est.e2e_s / e2e_target, MAX_RATIO)
        cols[11] = est.cost_usd * 1000.0
        cols[12] = est.rtt_s * 10.0
        cols[13] = est.transfer_s
        cols[14] = est.cached_fraction
        cols[15] = est.same_site
        s, d = self.static, self.dynamic
        max_batch = s[:, S_MAX_BATCH]
        cols[16] = d[:, D_QUEUE] / max_batch
        cols[17] = d[:, D_RUNNING] / max_batch
        cols[18] = d[:, D_KV_USED] / s[:, S_KV_CAPACITY]
        cols[19] = s[:, S_USD_PER_HOUR] / 10.0
        cols[20] = s[:, S_PREFILL_RATE] / 10000.0
        cols[21] = s[:, S_STEP_MS] / 100.0
        cols[_TIER_COLUMN + s[:, S_TIER].astype(np.intp), np.arange(n)] = 1.0
        return rows

    def take(self, keep: np.ndarray) -> Candidates:
        """The candidates where `keep` (a bool array) is true, in the same order."""
        out = Candidates.__new__(Candidates)
        out.fleet, out.request = self.fleet, self.request
        out.index = self.index[keep]
        out.static = self.static[keep]
        out.dynamic = self.dynamic[keep]
        out._prefix = self._prefix
        out._match = self._match
        out._routes = None if self._routes is None else self._routes[keep]
        out._blocks = None if self._blocks is None else self._blocks[keep]
        out._est = out._rows = None
        out._targets = self._targets
        return out


def dynamic_of_views(fleet: Fleet, views: Sequence[NodeView]) -> np.ndarray:
    """The fleet's dynamic columns with the given views' state (other nodes idle)."""
    dynamic = np.zeros((fleet.size, DYNAMIC_COLUMNS), dtype=np.float64)
    for view in views:
        i = fleet.index_of[view.name]
        dynamic[i] = (view.queue_depth, view.running, view.kv_used_bytes, view.queued_prompt_tokens)
    return dynamic


_FLEETS: dict[int, tuple[Topology, Fleet]] = {}


def fleet_of(topology: Topology) -> Fleet:
    """A Fleet for `topology`, kept for the few topologies a process uses (view-based
    callers: tests, the oracle); a decision path holds its own Fleet."""
    entry = _FLEETS.get(id(topology))
    if entry is None or entry[0] is not topology:
        if len(_FLEETS) > 16:
            _FLEETS.clear()
        entry = _FLEETS[id(topology)] = (topology, Fleet(topology))
    return entry[1]


def candidates_of_views(
    request: PlacementRequest, views: Sequence[NodeView], topology: Topology
) -> Candidates:
    """`views` (which passed the constraints) as kernel candidates, in the same order."""
    fleet = fleet_of(topology)
    index = np.array([fleet.index_of[v.name] for v in views], dtype=np.int64)
    blocks = np.array(
        [v.cached_prefix_blocks(request.prefix_hashes) for v in views], dtype=np.float64
    )
    return Candidates(fleet, request, index, dynamic_of_views(fleet, views), prefix_blocks=blocks)
