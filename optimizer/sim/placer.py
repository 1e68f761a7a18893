"""The simulator's control plane: the live engine's decision pipeline as a replay runs it.

A simulated request meets two worlds. The data plane, `optimizer.sim.engine`, is what happens
to it: the event heap, the network between its source and its nodes, the nodes serving it, the
operations that interrupt them. The control plane, this module, is what the deciders know and
do about it: which decider places it (`optimizer.sim.deciders`), what that decider sees (the
exact state, or a telemetry view, `optimizer.sim.telemetry`), the filters the live engine would
run (constraints, breakers fed with this run's outcomes, staleness), the policy's choice, and
the reasons a request found no candidate. The engine calls in when a request needs a node and
reports back what it sent; it never reads a decider's view, and this module never touches a
node, so a change to what the policy sees cannot change how a node serves, and the other way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from optimizer.decide.filters.breakers import BreakerBoard, BreakerConfig
from optimizer.decide.framework import Filter, Splitter, Trip
from optimizer.decide.pipeline import Pipeline
from optimizer.decide.registry import get_filter
from optimizer.decide.request import PlacementRequest
from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import Fleet
from optimizer.decide.state.live import LiveState
from optimizer.decide.state.prefix import PrefixIndex
from optimizer.sim.deciders import Deciders
from optimizer.sim.requests import REJECTED, RequestTable
from optimizer.sim.telemetry import TelemetryModel


class Placer:
    """The deciders of one run: they place requests with one pipeline and one policy, each on
    its own view when there are several (`rid`: the request's row in the run's table)."""

    def __init__(
        self,
        fleet: Fleet,
        table: RequestTable,
        policy: Policy,
        exact: tuple[np.ndarray, PrefixIndex],
        clock: Callable[[], float],
        *,
        telemetry: TelemetryModel | None,
        breakers: BreakerConfig | None,
        stale_after_s: float | None,
        deciders: Deciders | None,
        splitter: Splitter | None,
    ) -> None:
        """`exact`: the nodes' dynamic columns and prefix index as they are (what a decider
        sees without `telemetry`); `clock`: the run's simulated time, for the breakers. The
        rest are the `Simulator`'s arguments of the same names."""
        self.fleet = fleet
        self.table = table
        self.policy = policy
        self._dynamic, self._prefix = exact
        if deciders is not None and telemetry is None:
            raise ValueError("several deciders need a telemetry model (--telemetry-interval)")
        if deciders is not None and len(deciders.of) != len(table.requests):
            raise ValueError(
                f"{len(deciders.of)} deciders assigned to {len(table.requests)} requests"
            )
        self.deciders = deciders
        views = deciders.views if deciders is not None else 1
        self.telemetry = telemetry.start(fleet, views) if telemetry is not None else None
        self.breakers = BreakerBoard(breakers, clock=clock) if breakers else None
        if self.breakers is not None:
            table.on_outcome = self._outcome
        self.pipeline = Pipeline(self._filters(stale_after_s), splitter=splitter)
        self.reject_reasons: Counter[str] = Counter()

    def _filters(self, stale_after_s: float | None) -> list[Filter]:
        """The live engine's filters this run models: the constraints always, the breakers
        and staleness when asked for (a subset is a caller's, and the simulator has none)."""
        filters = [get_filter("constraints")]
        if self.breakers is not None:
            filters.append(get_filter("breakers", board=self.breakers))
        if stale_after_s is not None:
            if self.telemetry is None:
                raise ValueError("stale telemetry needs a telemetry model (--telemetry-interval)")
            filters.append(get_filter("stale-telemetry", stale_after_s=stale_after_s))
        return filters

    def _outcome(self, rid: int, ok: bool) -> None:
        """A request's outcome on its node, for the breakers (served, or lost in a failure)."""
        assert self.breakers is not None
        self.breakers.record(self.fleet.names[self.table.node[rid]], ok)

    def _live(self, rid: int) -> LiveState:
        """The live state of the decider that places request `rid` (there is a telemetry model)."""
        assert self.telemetry is not None
        if self.deciders is None:
            return self.telemetry.live
        return self.telemetry.views[self.deciders.view_of(rid)]

    def _state(self, rid: int) -> tuple[np.ndarray, PrefixIndex, LiveState | None]:
        """What the policy placing `rid` sees: the exact state, or its decider's live state."""
        if self.telemetry is not None:
            live = self._live(rid)
            return live.dynamic, live.prefix, live
        return self._dynamic, self._prefix, None

    def decide(
        self, rid: int, request: PlacementRequest, now: float
    ) -> tuple[int, int | None] | None:
        """The pipeline's node for request `rid` and, when it splits, the prefill node; None,
        the request marked rejected, when no node may serve it."""
        dynamic, prefix, live = self._state(rid)
        choice = self.pipeline.decide(
            self.fleet, request, dynamic, prefix, self.policy, 1, live=live, now=now
        )
        node = choice.node
        if node is None:
            self._reject(rid, choice.trip)
            return None
        return node, choice.prefill_node

    def candidates(self, rid: int, request: PlacementRequest, now: float) -> Candidates:
        """The nodes that may serve request `rid` as the policy sees them (the exact state,
        or the telemetry model's); when there are none the request is marked rejected."""
        dynamic, prefix, live = self._state(rid)
        candidates, trip = self.pipeline.candidates(
            self.fleet, request, dynamic, prefix, live=live, now=now
        )
        if not len(candidates):
            self._reject(rid, trip)
        return candidates

    def _reject(self, rid: int, trip: Trip) -> None:
        table = self.table
        table.status[rid] = REJECTED
        reasons = sorted(set(trip.rejected().values()))
        table.reject_reason[rid] = ",".join(reasons)
        self.reject_reasons.update(reasons)
        table.resolved.append(rid)

    def sent(self, rid: int, request: PlacementRequest, node: int, prefill: int | None) -> None:
        """Request `rid` was sent to `node` (its prompt to `prefill` when split): its decider
        counts the send until the next scrape, and the breakers the pick."""
        if self.telemetry is not None:
            live = self._live(rid)
            # A split's decode half counts as running on its node, as the node reports it
            # (`optimizer.sim.occupancy`), not as a queued prompt (issue #30).
            live.sent(
                node, self.table.model[rid], request.prefix_hashes, decode_only=prefill is not None
            )
            if prefill is not None:
                live.sent(prefill, self.table.model[rid], request.prefix_hashes)
        if self.breakers is not None:
            self.breakers.on_pick(self.fleet.names[node])
