"""One decision: hard constraints, then the policy's scores, then a pick and ordered fallbacks.

The constraints, node views, scores and features are the optimizer's own (`optimizer.decision`,
`optimizer.constraints`, `optimizer.policies`), so a decision served here and one made in the
simulator on the same state get the same scores (docs/architecture.md rule 1). What only the live
engine knows is added on top: telemetry staleness, circuit breakers, canary routing, shadow scoring
and an approximate per-node prefix index built from its own past decisions (as llm-d's
approximate prefix-cache scorer does, since engines do not export their cache contents).
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from console.placement.engine.breakers import BreakerBoard
from console.placement.engine.scorer_guard import ScorerGuard
from console.placement.engine.snapshot import PolicyRef, Snapshot
from optimizer.constraints import REASON_NO_KV_ROOM, filter_candidates, sequence_kv_bytes
from optimizer.decision import BLOCK_TOKENS, NodeView, PlacementRequest, node_view
from optimizer.estimates import estimate
from optimizer.kernel.prefix import PrefixCache
from optimizer.policies import Policy, ordered

REASON_STALE = "stale_telemetry"
REASON_BREAKER = "breaker_open"


class UnknownName(ValueError):
    """The request names a model, source, site or SLO the inventory does not have."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


@dataclass(frozen=True)
class DecisionInput:
    """A validated decision request (docs/contracts.md §4, POST /api/v1/placements)."""

    model: str
    prompt_tokens: int
    max_output_tokens: int
    source: str | None = None
    site: str | None = None
    slo: str | None = None
    prefix_hashes: tuple[int, ...] = ()
    session_id: str | None = None
    explain: bool = False


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
        self._prefix: dict[str, PrefixCache] = {}
        self._sent_since_load: dict[str, int] = {}
        self._base_views: dict[str, list[NodeView]] = {}
        self._static: dict[tuple[str, str, str | None], tuple[list[NodeView], dict[str, str]]] = {}

    # -- snapshot --------------------------------------------------------------------------
    @property
    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    def install(self, snapshot: Snapshot) -> None:
        """Swap in a new snapshot; local in-flight counts restart where telemetry is newer."""
        with self._lock:
            old = self._snapshot
            for node, load in snapshot.loads.items():
                previous = old.loads.get(node) if old else None
                if previous is None or load.measured_at > previous.measured_at:
                    self._sent_since_load[node] = 0
            if old is None or old.topology is not snapshot.topology:
                known = {n.name for n in snapshot.topology.nodes}
                self._prefix = {k: v for k, v in self._prefix.items() if k in known}
            for name in snapshot.shared_open_breakers:
                self.breakers.force_open(name, "opened by another server process")
            self._base_views = {}
            self._static = {}
            self._snapshot = snapshot

    # -- the decision ----------------------------------------------------------------------
    def candidates(
        self, snap: Snapshot, request: PlacementRequest, among: set[str] | None = None
    ) -> tuple[list[NodeView], dict[str, str]]:
        """`filter_candidates` over every node as a policy sees it for this request (the
        snapshot's telemetry, plus what this engine sent since it was measured, plus its
        prefix index), without building live views for nodes the static constraints rule out.

        Every constraint but the KV room depends only on the snapshot and the request's model,
        site and residency, and no constraint reads what `_live_view` adds (queue, prefix
        blocks), so the static split is computed once per snapshot and key and only the
        survivors get live views: same candidates, same reasons, a fraction of the work."""
        key = (request.model, request.source_site, request.residency)
        split = self._static.get(key)
        if split is None:
            probe = dataclasses.replace(request, prompt_tokens=0, max_output_tokens=0)
            split = self._static[key] = filter_candidates(
                probe, self._base(snap, request.model), snap.topology
            )
        static_candidates, static_rejected = split
        rejected = (
            dict(static_rejected)
            if among is None
            else {n: r for n, r in static_rejected.items() if n in among}
        )
        index = _model_index(snap.topology, request.model)
        candidates = []
        for base in static_candidates:
            if among is not None and base.name not in among:
                continue
            if sequence_kv_bytes(request, base) > base.kv_capacity_bytes:
                rejected[base.name] = REASON_NO_KV_ROOM
            else:
                candidates.append(self._live_view(base, request, index))
        return candidates, rejected

    def _base(self, snap: Snapshot, model: str) -> list[NodeView]:
        """Views built from the snapshot alone, made once per snapshot and model and shared
        (policies never modify views)."""
        base = self._base_views.get(model)
        if base is None:
            base = self._base_views[model] = _base_views(snap, model)
        return base

    def _live_view(self, b: NodeView, request: PlacementRequest, model_index: int) -> NodeView:
        """`b` plus this engine's local knowledge; a fresh view only when there is some."""
        extra = self._sent_since_load.get(b.name, 0)
        cache = self._prefix.get(b.name) if request.prefix_hashes else None
        blocks = cache.match(model_index, request.prefix_hashes) if cache else 0
        if not (extra or blocks):
            return b
        # Positional on purpose: dataclasses.replace costs ten times as much, and this runs
        # for most candidates of every decision.
        return NodeView(
            b.name,
            b.site,
            b.tier,
            b.jurisdiction,
            b.accelerator,
            b.gpus,
            b.models,
            b.state,
            b.usd_per_hour,
            b.kv_capacity_bytes,
            b.kv_used_bytes,
            b.queue_depth + extra,
            b.running,
            b.max_batch,
            b.prefill_tokens_per_s,
            b.decode_step_ms,
            b.decode_step_ms_per_seq,
            b.kv_bytes_per_token,
            b.queued_prompt_tokens,
            blocks,
        )

    def resolve(self, body: DecisionInput) -> PlacementRequest:
        """`body` resolved against the inventory, deciding nothing; raise UnknownName as
        `decide` would (so a batch can be checked whole before any of it is decided)."""
        snap = self._snapshot
        if snap is None:
            raise RuntimeError("the decision engine has no snapshot yet")
        return _request_of(snap, body)

    def decide(self, body: DecisionInput) -> Decision:
        start = time.perf_counter()
        snap = self._snapshot
        if snap is None:
            raise RuntimeError("the decision engine has no snapshot yet")
        request = _request_of(snap, body)
        decision_id = uuid.uuid4().hex
        with self._lock:
            now = time.time()
            candidates, rejected = self.candidates(snap, request)
            candidates = self._live_filter(snap, candidates, rejected, now)
            ref, arm = self._arm(snap, body.session_id or decision_id)
            if not candidates:
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
                )
            scores, used, degraded = self._score(ref, snap, request, candidates)
            order = ordered(scores)
            pick = candidates[order[0]]
            self._remember(snap, request, pick)
            decision = Decision(
                decision_id,
                request,
                pick.name,
                pick.site,
                [candidates[i].name for i in order[1 : 1 + self.max_fallbacks]],
                used,
                arm,
                rejected,
                degraded=degraded,
                session_id=body.session_id,
            )
            if snap.rollout.shadow is not None:
                decision.shadow = self._shadow(snap, request, candidates, pick, order)
            if body.explain:
                decision.candidates = _explain(request, candidates, scores, order, snap, now)
        decision.latency_us = (time.perf_counter() - start) * 1e6
        return decision

    def rank(self, body: DecisionInput, among: set[str]) -> tuple[list[str], dict[str, str]]:
        """The nodes of `among` that may serve `body`, best first by the active policy, and
        the rejected ones with reasons; records nothing (the scheduler extender's question)."""
        snap = self._snapshot
        if snap is None:
            raise RuntimeError("the decision engine has no snapshot yet")
        request = _request_of(snap, body)
        with self._lock:
            now = time.time()
            candidates, rejected = self.candidates(snap, request, among)
            candidates = self._live_filter(snap, candidates, rejected, now)
            if not candidates:
                return [], rejected
            scores, _, _ = self._score(snap.rollout.active, snap, request, candidates)
        return [candidates[i].name for i in ordered(scores)], rejected

    # -- pieces ----------------------------------------------------------------------------
    def _live_filter(
        self, snap: Snapshot, candidates: list[NodeView], rejected: dict[str, str], now: float
    ) -> list[NodeView]:
        """Open breakers always exclude. Stale telemetry excludes only while fresh candidates
        remain: with every exporter silent, placing on old data beats refusing service."""
        kept = []
        for view in candidates:
            if self.breakers.allows(view.name):
                kept.append(view)
            else:
                rejected[view.name] = REASON_BREAKER
        fresh: list[NodeView] = []
        stale: list[NodeView] = []
        for view in kept:
            load = snap.loads.get(view.name)
            is_stale = load is not None and load.age_s(now) > self.stale_after_s
            (stale if is_stale else fresh).append(view)
        if not fresh:
            return stale
        for view in stale:
            rejected[view.name] = REASON_STALE
        return fresh

    def _arm(self, snap: Snapshot, sticky_key: str) -> tuple[PolicyRef, str]:
        """Canary routing, sticky per session: the same session always lands on one arm."""
        rollout = snap.rollout
        if rollout.canary is not None and rollout.canary_share > 0:
            bucket = zlib.crc32(sticky_key.encode()) % 10_000
            if bucket < rollout.canary_share * 10_000:
                return rollout.canary, "canary"
        return rollout.active, "active"

    def _score(
        self,
        ref: PolicyRef,
        snap: Snapshot,
        request: PlacementRequest,
        candidates: Sequence[NodeView],
    ) -> tuple[np.ndarray, PolicyRef, str]:
        """The policy's scores, or the fallback heuristic's when the scorer fails, is slow
        or cannot be loaded; the caller never sees an error for that."""
        if ref.key != self.fallback.key and self.guard.usable(ref.key):
            try:
                policy = self._load_policy(ref, snap)
                started = time.perf_counter()  # scoring is timed, loading is not
                scores = np.asarray(
                    policy.scores(request, candidates, snap.topology), dtype=np.float64
                )
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
        return np.asarray(policy.scores(request, candidates, snap.topology)), self.fallback, reason

    def _shadow(
        self,
        snap: Snapshot,
        request: PlacementRequest,
        candidates: Sequence[NodeView],
        pick: NodeView,
        order: list[int],
    ) -> dict[str, Any] | None:
        ref = snap.rollout.shadow
        assert ref is not None
        try:
            scores = self._load_policy(ref, snap).scores(request, candidates, snap.topology)
        except Exception:
            return None
        shadow_pick = candidates[int(np.argmax(scores))]
        est = estimate(request, [pick, shadow_pick], snap.topology)
        return {
            "policy": ref.key,
            "version_id": ref.version_id,
            "node": shadow_pick.name,
            "agreed": shadow_pick.name == pick.name,
            "ttft_delta_ms": float(est.ttft_s[1] - est.ttft_s[0]) * 1000,
            "cost_delta_usd": float(est.cost_usd[1] - est.cost_usd[0]),
        }

    def _remember(self, snap: Snapshot, request: PlacementRequest, pick: NodeView) -> None:
        self._sent_since_load[pick.name] = self._sent_since_load.get(pick.name, 0) + 1
        self.breakers.on_pick(pick.name)
        if request.prefix_hashes:
            cache = self._prefix.setdefault(pick.name, PrefixCache())
            cache.insert(
                _model_index(snap.topology, request.model),
                request.prefix_hashes,
                BLOCK_TOKENS * pick.kv_bytes_per_token,
                pick.kv_capacity_bytes,
            )


def _base_views(snap: Snapshot, model: str) -> list[NodeView]:
    """Views of every node for `model` from the topology and the snapshot's telemetry."""
    topology = snap.topology
    views = []
    for node in topology.nodes:
        load = snap.loads.get(node.name)
        capacity = topology.kv_capacity_bytes(node)
        views.append(
            node_view(
                topology,
                node.name,
                model,
                kv_used_bytes=int((load.kv_usage if load else 0.0) * capacity),
                queue_depth=load.queue_depth if load else 0,
                running=load.running if load else 0,
            )
        )
    return views


def _model_index(topology: Any, model: str) -> int:
    for i, m in enumerate(topology.models):
        if m.name == model:
            return i
    return 0


def _request_of(snap: Snapshot, body: DecisionInput) -> PlacementRequest:
    """Resolve names against the inventory; unknown names are the caller's error (400)."""
    from optimizer.decision import placement_request

    topology = snap.topology
    if body.model not in topology.model_by_name:
        raise UnknownName("model", f"Unknown model {body.model!r}.")
    slo = body.slo
    if body.source is not None:
        source = topology.source_by_name.get(body.source)
        if source is None:
            raise UnknownName("source", f"Unknown source {body.source!r}.")
        site = source.site
        slo = slo or source.slo
    elif body.site is not None:
        if body.site not in topology.site_by_name:
            raise UnknownName("site", f"Unknown site {body.site!r}.")
        site = body.site
    else:
        raise UnknownName("source", "Give a source, or a site for unregistered callers.")
    if slo is not None and slo not in topology.slo_by_name:
        raise UnknownName("slo", f"Unknown SLO {slo!r}.")
    return placement_request(
        topology,
        model=body.model,
        source_site=site,
        slo=slo,
        prompt_tokens=body.prompt_tokens,
        max_output_tokens=body.max_output_tokens,
        prefix_hashes=body.prefix_hashes,
        source=body.source,
    )


def _explain(
    request: PlacementRequest,
    candidates: Sequence[NodeView],
    scores: np.ndarray,
    order: list[int],
    snap: Snapshot,
    now: float,
) -> list[dict[str, Any]]:
    rank = {index: position for position, index in enumerate(order)}
    est = estimate(request, candidates, snap.topology)
    rows: list[dict[str, Any]] = []
    for i, view in enumerate(candidates):
        load = snap.loads.get(view.name)
        rows.append(
            {
                "node": view.name,
                "site": view.site,
                "tier": view.tier,
                "score": float(scores[i]),
                "rank": rank[i] + 1,
                "estimated_ttft_ms": round(float(est.ttft_s[i]) * 1000, 3),
                "estimated_e2e_ms": round(float(est.e2e_s[i]) * 1000, 3),
                "estimated_cost_usd": float(est.cost_usd[i]),
                "queue_depth": view.queue_depth,
                "running": view.running,
                "kv_used_fraction": view.kv_used_bytes / view.kv_capacity_bytes
                if view.kv_capacity_bytes
                else 0.0,
                "prefix_blocks": view.prefix_blocks,
                "telemetry_age_s": None if load is None else round(load.age_s(now), 3),
            }
        )
    rows.sort(key=lambda r: r["rank"])
    return rows
