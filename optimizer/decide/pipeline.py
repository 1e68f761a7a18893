"""The decision sequence, written once: filters, then the scorer, then the picker.

As the GIE EPP's scheduler profile runs a cycle (pkg/epp/scheduling/framework/
scheduler_profile.go: filters, weighted scorers, picker), every Locus decision runs here: the
console's engine for each door (HTTP, fast path, extender, ext_proc, the router), the
simulator, the Gymnasium env and the benches. So a decision served over HTTP and one made in
the simulator on the same state get the same candidates, scores and pick (docs/architecture.md
rule 1; the parity tests hold it).

- `candidates`: the filters, in order, then the survivors' columns (`Candidates`);
- `rank`: the scorer's scores on them, then the picker's first `k` positions;
- `decide`: both, then the split stage when the pipeline has one (`Splitter`,
  `optimizer.decide.pickers.split`): it may turn the answers into (decode, prefill) pairs.
On a fleet with prefill-only or decode-only nodes (`role`) the roles filter runs after the
others: one-node answers come from mixed nodes only, and the split stage picks from every
role (`Trip.pool`). A fleet of mixed nodes and a pipeline without a split stage run exactly
the one-node sequence.
A scorer guarded against failure and slowness (`scorers.guard.GuardedScorer`) is a scorer
here like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import numpy as np

from optimizer.decide.filters.roles import RolesFilter
from optimizer.decide.framework import Filter, Pair, Picker, Scorer, Splitter, Trip
from optimizer.decide.pickers.top_k import TopKPicker
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import Fleet
from optimizer.decide.state.live import LiveState
from optimizer.decide.state.prefix import PrefixIndex

_ROLES = RolesFilter()


class Choice:
    """What a decision found: the candidates (mixed nodes, when the fleet has roles), why the
    others went, the scores (None when no candidate was left to score) and the picked
    positions, best first (empty then); and the answers as pairs (`pairs`): each a decode
    node and, when split, its prefill node, both fleet indices. Unsplit answers are the
    picked candidates in `order`; a split's come first, then the one-node fallbacks."""

    __slots__ = ("candidates", "trip", "scores", "order", "_pairs")

    def __init__(
        self,
        candidates: Candidates,
        trip: Trip,
        scores: np.ndarray | None,
        order: list[int],
        pairs: list[Pair] | None = None,
    ) -> None:
        self.candidates = candidates
        self.trip = trip
        self.scores = scores
        self.order = order
        self._pairs = pairs

    @property
    def node(self) -> int | None:
        """The answering (decode) node's fleet index, None when there was no candidate."""
        if self._pairs is not None:
            return self._pairs[0].decode
        return int(self.candidates.index[self.order[0]]) if self.order else None

    @property
    def prefill_node(self) -> int | None:
        """The first answer's prefill node's fleet index when it is split, else None."""
        return self._pairs[0].prefill if self._pairs is not None else None

    @property
    def split(self) -> bool:
        """Whether the first answer is split."""
        return self._pairs is not None and self._pairs[0].prefill is not None

    @property
    def pairs(self) -> list[Pair]:
        """Every answer, best first: the pick, then its fallbacks."""
        if self._pairs is not None:
            return self._pairs
        index = self.candidates.index
        return [Pair(int(index[j])) for j in self.order]

    @property
    def prefill(self) -> list[int | None]:
        """The prefill node of each answer of `pairs` (None: not split)."""
        return [pair.prefill for pair in self.pairs]


class Pipeline:
    """Filters, scorer, picker. The filters are fixed per pipeline; the scorer comes with
    each call, because the rollout (canary, shadow) chooses it per decision."""

    __slots__ = ("filters", "picker", "splitter")

    def __init__(
        self,
        filters: Sequence[Filter],
        picker: Picker | None = None,
        splitter: Splitter | None = None,
    ) -> None:
        """`filters`, in the order they run; the first must be the hard constraints (every
        other filter narrows what it leaves). `splitter`: the split stage (None: one-node
        answers only)."""
        if not filters or filters[0].name != "constraints":
            raise ValueError("a pipeline's first filter must be 'constraints'")
        self.filters = tuple(filters)
        self.picker: Picker = picker if picker is not None else TopKPicker()
        self.splitter = splitter

    def candidates(
        self,
        fleet: Fleet,
        request: PlacementRequest,
        dynamic: np.ndarray,
        prefix: PrefixIndex | None,
        live: LiveState | None = None,
        now: float = 0.0,
        among: AbstractSet[str] | None = None,
    ) -> tuple[Candidates, Trip]:
        """The candidates of `request` on the state (`dynamic`: the fleet's dynamic columns,
        `prefix`: its prefix caches; `live`: the sampled state they come from, for the
        staleness filter) and the trip that chose them (`Trip.rejected` for the others)."""
        trip = Trip(fleet, request, dynamic, live, now, among)
        for f in self.filters:
            f.filter(trip)
        if fleet.has_roles:
            _ROLES.filter(trip)
        else:
            trip.pool = trip.index
        return Candidates(fleet, request, trip.index, dynamic, prefix, split=trip.split), trip

    def rank(self, candidates: Candidates, scorer: Scorer, k: int) -> tuple[np.ndarray, list[int]]:
        """The scorer's scores on (at least one) candidates and the picker's first `k`."""
        scores = scorer.score(candidates)
        return scores, self.picker.pick(scores, k)

    def decide(
        self,
        fleet: Fleet,
        request: PlacementRequest,
        dynamic: np.ndarray,
        prefix: PrefixIndex | None,
        scorer: Scorer,
        k: int,
        *,
        live: LiveState | None = None,
        now: float = 0.0,
        among: AbstractSet[str] | None = None,
    ) -> Choice:
        """One decision: `candidates`, then `rank` when any is left, then the split stage."""
        candidates, trip = self.candidates(fleet, request, dynamic, prefix, live, now, among)
        splitter = self.splitter
        if not len(trip.index):
            pairs = None
            if splitter is not None and len(trip.pool):
                pairs = splitter.pairs(trip, candidates, [], k, prefix)
            return Choice(candidates, trip, None, [], pairs)
        scores, order = self.rank(candidates, scorer, k)
        if splitter is None:
            return Choice(candidates, trip, scores, order)
        return Choice(
            candidates, trip, scores, order, splitter.pairs(trip, candidates, order, k, prefix)
        )
