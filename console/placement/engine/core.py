"""One decision: hard constraints, then the policy's scores, then a pick and ordered fallbacks.

The constraints, columns, estimates, scores and features are the optimizer's decision kernel
(`optimizer.kernel`, `optimizer.policies`), so a decision served here and one made in the
simulator on the same state get the same scores (docs/architecture.md rule 1). What the engine
knows of each node is `optimizer.kernel.LiveState`: the latest telemetry plus the requests it
sent since and an approximate prefix index of them (as llm-d's approximate prefix-cache
scorer, since engines do not export their cache contents) — the same class the simulator
feeds with `--telemetry-interval`. What only the live engine adds on top: telemetry
staleness, circuit breakers, canary routing and shadow scoring.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from console.placement.engine.breakers import BreakerBoard
from console.placement.engine.explain import explain, receipt_candidates
from console.placement.engine.ids import decision_ids
from console.placement.engine.inputs import DecisionInput, request_of
from console.placement.engine.scorer_guard import ScorerGuard
from console.placement.engine.snapshot import PolicyRef, Snapshot
from optimizer.decision import PlacementRequest
from optimizer.kernel.candidates import Candidates, constrain, rejected_reasons, top_k
from optimizer.kernel.fleet import D_QUEUE, Fleet
from optimizer.kernel.live import LiveState
from optimizer.policies import Policy

REASON_STALE = "stale_telemetry"
REASON_BREAKER = "breaker_open"
# Candidates every decision keeps, scored and estimated, for its receipt (docs/dashboard.md):
# the pick plus the default fallbacks and one more, so a receipt shows why the fallbacks came
# in that order.
RECEIPT_CANDIDATES = 5


@dataclass
class Decision:
    """The engine's answer; `node` is None when no node may serve the request."""

    decision_id: str
    request: PlacementRequest
    node: str | None
    site: str | None
    fallbacks: list[str]
    policy: PolicyRef
    arm: str
    rejected: dict[str, str]
    latency_us: float = 0.0
    degraded: str = ""
    candidates: list[dict[str, Any]] = field(default_factory=list)
    shadow: dict[str, Any] | None = None
    session_id: str | None = None
    caller: str = ""
    # The best RECEIPT_CANDIDATES candidates in the receipt's compact form (receipts.py).
    top: list[dict[str, Any]] = field(default_factory=list)


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
    ) -> None:
        self.breakers = breakers
        self._load_policy = load_policy
        self.fallback = fallback
        self.stale_after_s = stale_after_s
        self.max_fallbacks = max_fallbacks
        self.guard = ScorerGuard(budget_s=scorer_budget_s)
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
            assert self._live is not None
            self._live.observe_all(snapshot.loads)
            for name in snapshot.shared_open_breakers:
                self.breakers.force_open(name, "opened by another server process")
            self._snapshot = snapshot

    # -- the decision ----------------------------------------------------------------------
    def resolve(self, body: DecisionInput) -> PlacementRequest:
        """`body` resolved against the inventory, deciding nothing; raise UnknownName as
        `decide` would (so a batch can be checked whole before any of it is decided)."""
        snap = self._snapshot
        if snap is None:
            raise RuntimeError("the decision engine has no snapshot yet")
        return request_of(snap, body)

    def decide(self, body: DecisionInput) -> Decision:
        start = time.perf_counter()
        snap = self._snapshot
        if snap is None:
            raise RuntimeError("the decision engine has no snapshot yet")
        request = request_of(snap, body)
        decision_id = decision_ids.next()
        with self._lock:
            now = time.time()
            candidates, rejected = self._candidates(request, body.among, now)
            ref, arm = self._arm(snap, body.session_id or decision_id)
            if not len(candidates):
                return Decision(
                    decision_id,
                    request,
                    None,
                    None,
                    [],
                    ref,
                    arm,
                    rejected,
                    latency_us=(time.perf_counter() - start) * 1e6,
                    session_id=body.session_id,
                    caller=body.caller,
                )
            scores, used, degraded = self._score(ref, snap, candidates)
            order = top_k(scores, max(1 + self.max_fallbacks, RECEIPT_CANDIDATES))
            names = candidates.names
            pick = order[0]
            self._remember(request, int(candidates.index[pick]))
            decision = Decision(
                decision_id,
                request,
                names[pick],
                snap.topology.node_by_name[names[pick]].site,
                [names[i] for i in order[1 : 1 + self.max_fallbacks]],
                used,
                arm,
                rejected,
                degraded=degraded,
                session_id=body.session_id,
                caller=body.caller,
            )
            if snap.rollout.shadow is not None:
                decision.shadow = self._shadow(snap, candidates, pick)
            decision.top = receipt_candidates(
                candidates, scores, order[:RECEIPT_CANDIDATES], snap.topology
            )
            if body.explain:
                decision.candidates = explain(candidates, scores, snap, self._live, now)
        decision.latency_us = (time.perf_counter() - start) * 1e6
        return decision

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
            candidates, rejected = self._candidates(request, among, time.time())
            if not len(candidates):
                return [], rejected
            scores, _, _ = self._score(snap.rollout.active, snap, candidates)
        names = candidates.names
        return [names[i] for i in top_k(scores, len(names))], rejected

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
    ) -> tuple[Candidates, dict[str, str]]:
        """The hard constraints (the kernel's), restricted to `among` when given, then the
        live filter: open breakers always exclude; stale telemetry excludes only while fresh
        candidates remain (with every exporter silent, placing on old data beats refusing
        service)."""
        fleet, live = self._fleet, self._live
        assert fleet is not None and live is not None
        index, split, no_room = constrain(fleet, request)
        rejected = rejected_reasons(fleet, split, no_room)
        if among is not None:
            rejected = {n: r for n, r in rejected.items() if n in among}
            keep = np.array([fleet.names[i] in among for i in index.tolist()], dtype=bool)
            index = index[keep]
        blocked = self.breakers.not_closed()
        if blocked:
            allowed = np.ones(len(index), dtype=bool)
            for j, i in enumerate(index.tolist()):
                name = fleet.names[i]
                if name in blocked and not self.breakers.allows(name):
                    allowed[j] = False
                    rejected[name] = REASON_BREAKER
            index = index[allowed]
        stale = live.age_s(index, now) > self.stale_after_s  # NaN (no telemetry): fresh
        if stale.any() and not stale.all():
            for i in index[stale].tolist():
                rejected[fleet.names[i]] = REASON_STALE
            index = index[~stale]
        candidates = Candidates(fleet, request, index, live.dynamic, live.prefix, split=split)
        return candidates, rejected

    def _arm(self, snap: Snapshot, sticky_key: str) -> tuple[PolicyRef, str]:
        """Canary routing, sticky per session: the same session always lands on one arm."""
        rollout = snap.rollout
        if rollout.canary is not None and rollout.canary_share > 0:
            bucket = zlib.crc32(sticky_key.encode()) % 10_000
            if bucket < rollout.canary_share * 10_000:
                return rollout.canary, "canary"
        return rollout.active, "active"

    def _score(
        self, ref: PolicyRef, snap: Snapshot, candidates: Candidates
    ) -> tuple[np.ndarray, PolicyRef, str]:
        """The policy's scores, or the fallback heuristic's when the scorer fails, is slow
        or cannot be loaded; the caller never sees an error for that."""
        if ref.key != self.fallback.key and self.guard.usable(ref.key):
            try:
                policy = self._load_policy(ref, snap)
                started = time.perf_counter()  # scoring is timed, loading is not
                scores = np.asarray(policy.score(candidates), dtype=np.float64)
                if scores.shape != (len(candidates),) or not np.all(np.isfinite(scores)):
                    raise ValueError(f"scorer returned shape {scores.shape} or non-finite values")
            except Exception as exc:
                self.guard.failed(ref.key, exc)
            else:
                # Only a trained scorer is bypassed for slowness: a heuristic is what the
                # engine would fall back to anyway, and on a busy machine every policy slows.
                self.guard.succeeded(ref.key, time.perf_counter() - started, timed=ref.learned)
                return scores, ref, ""
            reason = "scorer_error"
        elif ref.key == self.fallback.key:
            reason = ""
        else:
            reason = "scorer_slow" if self.guard.slow(ref.key) else "scorer_error"
        if reason:
            self.guard.count_fallback(reason)
        policy = self._load_policy(self.fallback, snap)
        return np.asarray(policy.score(candidates), dtype=np.float64), self.fallback, reason

    def _shadow(self, snap: Snapshot, candidates: Candidates, pick: int) -> dict[str, Any] | None:
        ref = snap.rollout.shadow
        assert ref is not None
        try:
            scores = self._load_policy(ref, snap).score(candidates)
        except Exception:
            return None
        other = int(np.argmax(scores))
        est = candidates.est
        return {
            "policy": ref.key,
            "version_id": ref.version_id,
            "node": candidates.names[other],
            "agreed": other == pick,
            "ttft_delta_ms": float(est.ttft_s[other] - est.ttft_s[pick]) * 1000,
            "cost_delta_usd": float(est.cost_usd[other] - est.cost_usd[pick]),
        }

    def _remember(self, request: PlacementRequest, node: int) -> None:
        fleet, live = self._fleet, self._live
        assert fleet is not None and live is not None
        live.sent(node, fleet.model_index[request.model], request.prefix_hashes)
        self.breakers.on_pick(fleet.names[node])
