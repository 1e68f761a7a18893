"""One decision served: the pipeline's filters, scorer and picker (`optimizer.decide`), plus
what only a serving engine adds around them: its snapshot, its live state, the rollout's arm,
the exploration probe's arm (`probing.py`), the guarded scorer, shadow scoring, the receipt
and `explain`.

The sequence itself is `optimizer.decide.pipeline`'s, the same the simulator runs, so a
decision served here and one made in the simulator on the same state get the same scores
(docs/architecture.md rule 1). What the engine knows of each node is
`optimizer.decide.state.live.LiveState`: the latest telemetry plus the requests it sent since
and an approximate prefix index of them (as llm-d's approximate prefix-cache scorer, since
engines do not export their cache contents) — the same class the simulator feeds with
`--telemetry-interval`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet

from console.placement.engine.decision import Decision, add_split, timed
from console.placement.engine.ids import decision_ids
from console.placement.engine.inputs import DecisionInput, request_of
from console.placement.engine.learned_why import LearnedExplainer
from console.placement.engine.probing import ProbeArm
from console.placement.engine.shadow import shadow_comparison
from optimizer.decide.explain import explain, guard_note, receipt_candidates
from optimizer.decide.filters.breakers import BreakerBoard
from optimizer.decide.framework import Pair, Splitter, Trip
from optimizer.decide.pickers.arms import arm
from optimizer.decide.pipeline import Choice, Pipeline
from optimizer.decide.registry import get_filter, is_learned
from optimizer.decide.request import PlacementRequest
from optimizer.decide.scorers.base import Policy
from optimizer.decide.scorers.guard import GuardedScorer, ScorerGuard
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import D_QUEUE, Fleet
from optimizer.decide.state.live import LiveState
from optimizer.decide.state.shared import Send, merge
from optimizer.decide.state.snapshot import PolicyRef, Snapshot

# Candidates every decision keeps, scored and estimated, for its receipt (docs/dashboard.md):
# the pick plus the default fallbacks and one more, so a receipt shows why the fallbacks came
# in that order.
RECEIPT_CANDIDATES = 5


class Engine:
    """Decides placements from the current snapshot. Thread-safe; one per process."""

    def __init__(
        self,
        *,
        breakers: BreakerBoard,
        load_policy: Callable[[PolicyRef, Snapshot], Policy],
        fallback: PolicyRef,
        stale_after_s: float,
        max_fallbacks: int = 3,
        scorer_budget_s: float = 0.005,
        on_fallback: Callable[[str], None] | None = None,
        on_sent: Callable[[Send], None] | None = None,
        learned_explain_every: int = 0,
        splitter: Splitter | None = None,
    ) -> None:
        """`on_fallback(reason)`: called for each decision the guard sends to `fallback`;
        `on_sent(send)`: for each request placed (the shared view's publisher);
        `learned_explain_every`: one trained-scorer decision in that many keeps why it was
        picked in its receipt (0: only those asked to explain); `splitter`: the split stage,
        which may answer with a prefill and a decode node."""
        self.on_sent = on_sent
        self.breakers = breakers
        self._load_policy = load_policy
        self.fallback = fallback
        self.stale_after_s = stale_after_s
        self.max_fallbacks = max_fallbacks
        self.guard = ScorerGuard(budget_s=scorer_budget_s)
        self.learned_why = LearnedExplainer(learned_explain_every)
        self.probe_arm = ProbeArm()
        if on_fallback is not None:
            self.guard.on_fallback = on_fallback
        # The serving pipeline: the constraints, the caller's subset, the breakers, then
        # stale telemetry (docs/architecture.md, "How a decision is made").
        self.pipeline = Pipeline(
            [
                get_filter("constraints"),
                get_filter("among"),
                get_filter("breakers", board=breakers),
                get_filter("stale-telemetry", stale_after_s=stale_after_s),
            ],
        )
        self._splitter = splitter
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        self._fleet: Fleet | None = None
        self._live: LiveState | None = None

    # -- snapshot --------------------------------------------------------------------------
    @property
    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    @property
    def live(self) -> LiveState | None:
        """What this engine knows of each node (latest telemetry plus its own sends)."""
        return self._live

    def install(self, snapshot: Snapshot) -> None:
        """Swap in a new snapshot: the fleet's columns are rebuilt when the topology changed
        (what the engine knew of the nodes still there is kept), and its telemetry is fed to
        the live state (in-flight counts restart where a sample is newer)."""
        with self._lock:
            old = self._snapshot
            if old is None or old.topology is not snapshot.topology or self._fleet is None:
                self._fleet = Fleet(snapshot.topology)
                self._live = LiveState(self._fleet, previous=self._live)
                # Split answers on fleets with prefill or decode nodes only, as llm-d splits
                # only across pods labelled for one phase: a fleet of mixed nodes keeps its
                # one-node answers.
                self.pipeline.splitter = self._splitter if self._fleet.has_roles else None
            assert self._live is not None
            self._live.observe_all(snapshot.loads)
            self.probe_arm.installed(snapshot.probe)
            for name in snapshot.shared_open_breakers:
                self.breakers.force_open(name, "opened by another server process")
            self._snapshot = snapshot

    def merge(self, sends: list[Send]) -> int:
        """Merge other deciders' sends into the live state (`optimizer.decide.state.shared`);
        how many it could place (none before the first snapshot)."""
        with self._lock:
            if self._live is None:
                return 0
            return merge(self._live, sends)

    # -- the decision ----------------------------------------------------------------------
    def resolve(self, body: DecisionInput) -> PlacementRequest:
        """`body` resolved against the inventory, deciding nothing; raise UnknownName as
        `decide` would (so a batch can be checked whole before any of it is decided)."""
        snap = self._snapshot
        if snap is None:
            raise RuntimeError("the decision engine has no snapshot yet")
        return request_of(snap, body)

    def decide(self, body: DecisionInput) -> Decision:
        start, cpu0 = time.perf_counter(), time.thread_time()
        snap = self._snapshot
        if snap is None:
            raise RuntimeError("the decision engine has no snapshot yet")
        request = request_of(snap, body)
        decision_id = decision_ids.next()
        asked = time.perf_counter()
        with self._lock:
            waited = time.perf_counter() - asked
            now = time.time()
            ref, chosen_arm = arm(snap.rollout, body.session_id or decision_id)
            scorer = self._scorer(ref, snap)
            choice = self._decide(request, scorer, body.among, now)
            policy_pick = choice.order[0] if choice.order else -1
            # An exploration probe may answer instead (docs/twin.md): after the filters,
            # among the candidates, before the receipt is built from the order.
            choice, probe = self.probe_arm.apply(
                snap.probe,
                body.session_id or decision_id,
                choice,
                split=self.pipeline.splitter is not None,
                k=max(1 + self.max_fallbacks, RECEIPT_CANDIDATES),
            )
            candidates, order = choice.candidates, choice.order
            if choice.node is None:
                refused = Decision(
                    decision_id,
                    request,
                    None,
                    None,
                    [],
                    ref,
                    chosen_arm,
                    choice.trip.rejected(),
                    session_id=body.session_id,
                    caller=body.caller,
                )
                return timed(refused, start, cpu0, waited)
            scores = choice.scores
            assert self._fleet is not None
            names = self._fleet.names
            # The answers as (decode, prefill) pairs: the pick, then its fallbacks.
            pairs = choice.pairs[: 1 + self.max_fallbacks]
            pick = pairs[0]
            self._remember(request, pick)
            node_by_name = snap.topology.node_by_name
            decision = Decision(
                decision_id,
                request,
                names[pick.decode],
                node_by_name[names[pick.decode]].site,
                [names[p.decode] for p in pairs[1:]],
                scorer.used,
                chosen_arm,
                choice.trip.rejected(),
                degraded=scorer.degraded,
                session_id=body.session_id,
                caller=body.caller,
                probe=probe,
            )
            # Only a trained scorer has a trust region to report and a pick to attribute.
            learned: Policy | None = None
            if scorer.learned and not scorer.degraded:
                learned = self._load_policy(scorer.used, snap)
                decision.guard = guard_note(learned)
            if any(p.prefill is not None for p in pairs):
                add_split(decision, pairs, names, snap)
            if scores is not None:
                if snap.rollout.shadow is not None:
                    decision.shadow = shadow_comparison(
                        self.pipeline, self._load_policy, snap, candidates, policy_pick
                    )
                decision.top = receipt_candidates(
                    candidates, scores, order[:RECEIPT_CANDIDATES], snap.topology
                )
                if body.explain:
                    decision.candidates = explain(candidates, scores, snap, self._live, now)
                if learned is not None and probe is None:  # a probe's pick is not the scorer's
                    decision.learned = self.learned_why.attribution(
                        learned, candidates, scores, order, asked=body.explain
                    )
        return timed(decision, start, cpu0, waited)

    def rank(
        self, body: DecisionInput, among: AbstractSet[str]
    ) -> tuple[list[str], dict[str, str]]:
        """The nodes of `among` that may serve `body`, best first by the active policy, and
        the rejected ones with reasons; records nothing (the scheduler extender's question)."""
        snap = self._snapshot
        if snap is None:
            raise RuntimeError("the decision engine has no snapshot yet")
        request = request_of(snap, body)
        with self._lock:
            candidates, trip = self._candidates(request, among, time.time())
            if not len(candidates):
                return [], trip.rejected()
            scorer = self._scorer(snap.rollout.active, snap)
            _, order = self.pipeline.rank(candidates, scorer, len(candidates))
        names = candidates.names
        return [names[i] for i in order], trip.rejected()

    def queues(self, body: DecisionInput) -> dict[str, int]:
        """The queue of each node that may serve `body` (hard constraints and live filter
        applied), as this engine sees it: telemetry plus its own sends since. Decides and
        records nothing (a gateway's shedding question)."""
        snap = self._snapshot
        if snap is None:
            raise RuntimeError("the decision engine has no snapshot yet")
        request = request_of(snap, body)
        with self._lock:
            candidates, _ = self._candidates(request, body.among, time.time())
        queue = candidates.dynamic[:, D_QUEUE]
        return {name: int(queue[i]) for i, name in enumerate(candidates.names)}

    # -- pieces ----------------------------------------------------------------------------
    def _candidates(
        self, request: PlacementRequest, among: AbstractSet[str] | None, now: float
    ) -> tuple[Candidates, Trip]:
        """The pipeline's filters on the live state (`Pipeline.candidates`)."""
        fleet, live = self._fleet, self._live
        assert fleet is not None and live is not None
        return self.pipeline.candidates(
            fleet, request, live.dynamic, live.prefix, live=live, now=now, among=among
        )

    def _decide(
        self,
        request: PlacementRequest,
        scorer: GuardedScorer,
        among: AbstractSet[str] | None,
        now: float,
    ) -> Choice:
        """The whole pipeline on the live state (`Pipeline.decide`), keeping the receipt's
        candidates beyond the fallbacks."""
        fleet, live = self._fleet, self._live
        assert fleet is not None and live is not None
        k = max(1 + self.max_fallbacks, RECEIPT_CANDIDATES)
        return self.pipeline.decide(
            fleet, request, live.dynamic, live.prefix, scorer, k, live=live, now=now, among=among
        )

    def _scorer(self, ref: PolicyRef, snap: Snapshot) -> GuardedScorer:
        """`ref`'s scorer behind the guard, falling back to `self.fallback`."""
        return GuardedScorer(
            self.guard,
            ref,
            lambda r: self._load_policy(r, snap),
            self.fallback,
            learned=is_learned(ref.spec),
        )

    def _remember(self, request: PlacementRequest, pair: Pair) -> None:
        """The live state learns of the send: to the decode node, and to a split's prefill
        node too (its queue and prefix cache), as the simulator's `Placer.sent` does. A
        split's decode half counts as running there, not as a queued prompt (issue #30,
        `LiveState.sent`), and the shared view carries which half it is."""
        fleet, live = self._fleet, self._live
        assert fleet is not None and live is not None
        model = fleet.model_index[request.model]
        split = pair.prefill is not None
        live.sent(pair.decode, model, request.prefix_hashes, decode_only=split)
        if pair.prefill is not None:
            live.sent(pair.prefill, model, request.prefix_hashes)
            self.breakers.on_pick(fleet.names[pair.prefill])
        self.breakers.on_pick(fleet.names[pair.decode])
        if self.on_sent is not None:
            at = time.time()
            for node, decode_only in ((pair.decode, split), (pair.prefill, False)):
                if node is not None:
                    self.on_sent(
                        Send(
                            fleet.names[node], request.model, request.prefix_hashes, at, decode_only
                        )
                    )
