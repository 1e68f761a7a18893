"""The decision sequence, written once: filters, then the scorer, then the picker.

As the GIE EPP's scheduler profile runs a cycle (pkg/epp/scheduling/framework/
scheduler_profile.go: filters, weighted scorers, picker), every Locus decision runs here: the
console's engine for each door (HTTP, fast path, extender, ext_proc, the router), the
simulator, the Gymnasium env and the benches. So a decision served over HTTP and one made in
the simulator on the same state get the same candidates, scores and pick (docs/architecture.md
rule 1; the parity tests hold it).

- `candidates`: the filters, in order, then the survivors' columns (`Candidates`);
- `rank`: the scorer's scores on them, then the picker's first `k` positions;
- `decide`: both.
A scorer guarded against failure and slowness (`scorers.guard.GuardedScorer`) is a scorer
here like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import numpy as np

from optimizer.decide.framework import Filter, Picker, Scorer, Trip
from optimizer.decide.pickers.top_k import TopKPicker
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import Fleet
from optimizer.decide.state.live import LiveState
from optimizer.decide.state.prefix import PrefixIndex


class Choice:
    """What a decision found: the candidates, why the others went, the scores (None when no
    candidate was left to score) and the picked positions, best first (empty then)."""

    __slots__ = ("candidates", "trip", "scores", "order")

    def __init__(
        self,
        candidates: Candidates,
        trip: Trip,
        scores: np.ndarray | None,
        order: list[int],
    ) -> None:
        self.candidates = candidates
        self.trip = trip
        self.scores = scores
        self.order = order

    @property
    def node(self) -> int | None:
        """The picked node's fleet index, None when there was no candidate."""
        return int(self.candidates.index[self.order[0]]) if self.order else None


class Pipeline:
    """Filters, scorer, picker. The filters are fixed per pipeline; the scorer comes with
    each call, because the rollout (canary, shadow) chooses it per decision."""

    __slots__ = ("filters", "picker")

    def __init__(self, filters: Sequence[Filter], picker: Picker | None = None) -> None:
        """`filters`, in the order they run; the first must be the hard constraints (every
        other filter narrows what it leaves)."""
        if not filters or filters[0].name != "constraints":
            raise ValueError("a pipeline's first filter must be 'constraints'")
        self.filters = tuple(filters)
        self.picker: Picker = picker if picker is not None else TopKPicker()

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
        """One decision: `candidates`, then `rank` when any is left."""
        candidates, trip = self.candidates(fleet, request, dynamic, prefix, live, now, among)
        if not len(trip.index):
            return Choice(candidates, trip, None, [])
        scores, order = self.rank(candidates, scorer, k)
        return Choice(candidates, trip, scores, order)
