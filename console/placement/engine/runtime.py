"""The engine of this server process: one per process, refreshed and recorded in the
background, shared by every request (docs/architecture.md rule 2).

`runtime()` returns it, starting its threads on first use (not at import, so management
commands and migrations start none). Tests call `refresh()` to install a snapshot on the
spot and `recorder.flush()` to write what is buffered.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import threading
import time
from typing import Any

from django.conf import settings

from console.dbutil import release_connections
from console.placement.engine.core import Decision, Engine
from console.placement.engine.inputs import DecisionInput
from console.placement.engine.journal import Journal
from console.placement.engine.outcomes import Outcomes
from console.placement.engine.policies import LoadedPolicies
from console.placement.engine.recorder import Recorder
from console.placement.engine.records import live_event, record_row
from console.placement.engine.sharedview import SharedView
from console.placement.engine.writer import utcnow, write_to_database
from console.placement.metrics import (
    BREAKER_OPEN,
    BREAKER_TRIPS,
    DECISION_CPU,
    DECISION_LATENCY,
    DECISION_LOCK_WAIT,
    DECISIONS,
    FALLBACKS,
)
from console.placement.rollout import rollout_store
from console.placement.selectors import engine_snapshot
from console.placement.services import breaker_move_record, event_publish
from optimizer.decide.filters.breakers import OPEN, BreakerBoard, BreakerConfig
from optimizer.decide.framework import Splitter
from optimizer.decide.registry import get_splitter
from optimizer.decide.state.snapshot import PolicyRef

logger = logging.getLogger(__name__)


class Runtime:
    """Engine + background snapshot refresh + recorder, for one server process."""

    def __init__(self) -> None:
        self.default_policy = PolicyRef(
            name=settings.LOCUS_DEFAULT_POLICY,
            version="builtin",
            spec=settings.LOCUS_DEFAULT_POLICY,
        )
        fallback = PolicyRef(
            name=settings.LOCUS_FALLBACK_POLICY,
            version="builtin",
            spec=settings.LOCUS_FALLBACK_POLICY,
        )
        self.breakers = BreakerBoard(_breaker_config(), on_transition=self._breaker_moved)
        self.policies = LoadedPolicies()
        self.engine = Engine(
            breakers=self.breakers,
            load_policy=self.policies.get,
            fallback=fallback,
            stale_after_s=settings.LOCUS_TELEMETRY_STALE_SECONDS,
            max_fallbacks=settings.LOCUS_MAX_FALLBACKS,
            scorer_budget_s=settings.LOCUS_SCORER_BUDGET_MS / 1000.0,
            on_fallback=_count_fallback,
            learned_explain_every=settings.LOCUS_LEARNED_EXPLAIN_EVERY,
            splitter=_splitter(),
        )
        self.shared_view: SharedView | None = None
        if settings.LOCUS_SHARED_VIEW_URL:
            self.shared_view = SharedView(
                url=settings.LOCUS_SHARED_VIEW_URL,
                apply=self.engine.merge,
                stream=settings.LOCUS_SHARED_VIEW_STREAM,
                interval_s=settings.LOCUS_SHARED_VIEW_BATCH_MS / 1000.0,
                maxlen=settings.LOCUS_SHARED_VIEW_MAXLEN,
            )
            self.engine.on_sent = self.shared_view.publish
        journal_dir = settings.LOCUS_RECORD_JOURNAL_DIR
        self.recorder = Recorder(
            write_batch=write_to_database,
            publish=event_publish,
            journal=Journal(journal_dir) if journal_dir else None,
        )
        self.recorder.tick_hooks.append(self._flush_shadow)
        self._shadow_totals: dict[int, list[float]] = {}
        self.outcomes = Outcomes(
            recorder=self.recorder, breakers=self.breakers, snapshot=lambda: self.engine.snapshot
        )
        self._counters: dict[tuple[str, str], Any] = {}
        self._started = False
        self._start_lock = threading.Lock()
        self.last_refresh_error = ""

    # -- lifecycle -------------------------------------------------------------------------
    def ensure_started(self) -> None:
        if self._started:
            return
        with self._start_lock:
            if self._started:
                return
            if self.engine.snapshot is None:
                self.refresh()
            if settings.LOCUS_ENGINE_BACKGROUND:
                threading.Thread(
                    target=self._refresh_forever, name="locus-snapshot", daemon=True
                ).start()
                self.recorder.start()
                if self.shared_view is not None:  # after the first snapshot, which it warms
                    self.shared_view.start()
            if settings.LOCUS_GC_FREEZE:
                _freeze_heap()
            self._started = True

    def _refresh_forever(self) -> None:
        while True:
            time.sleep(settings.LOCUS_SNAPSHOT_REFRESH_SECONDS)
            self.refresh(reuse_topology=True)
            release_connections()

    def refresh(self, *, reuse_topology: bool = False) -> bool:
        """Build and install a new snapshot; on failure keep serving the old one. The
        background loop reuses the topology while the inventory revision holds; an explicit
        call rebuilds it (writes that bypass signals, such as QuerySet.update, stay visible)."""
        try:
            snapshot = engine_snapshot(
                default_policy=self.default_policy,
                previous=self.engine.snapshot if reuse_topology else None,
                breaker_open_s=_breaker_config().open_s,
            )
        except Exception as exc:
            if str(exc) != self.last_refresh_error:  # once per distinct problem, not per second
                serving = "the previous one" if self.engine.snapshot else "none yet"
                logger.warning("snapshot refresh failed; serving %s: %s", serving, exc)
            self.last_refresh_error = str(exc)
            return False
        previous = self.engine.snapshot
        if not snapshot.loads and previous is not None and previous.loads:
            # Every node's telemetry vanishing at once means the telemetry store is
            # unreachable (it reads as empty then): keep the last readings, which age into
            # staleness on their own, rather than placing as if the fleet were idle.
            snapshot = dataclasses.replace(snapshot, loads=previous.loads)
        self.policies.preload(snapshot)
        self.engine.install(snapshot)
        self.last_refresh_error = ""
        BREAKER_OPEN.set(len(self.breakers.open_nodes()))
        return True

    # -- decisions -------------------------------------------------------------------------
    def decide(self, body: DecisionInput) -> Decision:
        self.ensure_started()
        decision = self.engine.decide(body)
        DECISION_LATENCY.observe(decision.latency_us / 1e6)
        DECISION_CPU.observe(decision.cpu_us / 1e6)
        DECISION_LOCK_WAIT.observe(decision.lock_wait_us / 1e6)
        if decision.node is not None:
            self._decision_counter(decision.policy.key, decision.node).inc()
            self.outcomes.remember(decision)
            self.recorder.record(record_row(decision), lambda: live_event(decision))
            if decision.shadow and decision.shadow.get("version_id") is not None:
                totals = self._shadow_totals.setdefault(
                    decision.shadow["version_id"], [0, 0, 0.0, 0.0]
                )
                totals[0] += 1
                totals[1] += int(decision.shadow["agreed"])
                totals[2] += decision.shadow["ttft_delta_ms"]
                totals[3] += decision.shadow["cost_delta_usd"]
        return decision

    def _decision_counter(self, policy: str, node: str) -> Any:
        """The labelled counter child, kept (labels() takes a lock and builds a key each
        call, a measurable share of a decision)."""
        child = self._counters.get((policy, node))
        if child is None:
            child = self._counters[(policy, node)] = DECISIONS.labels(policy=policy, node=node)
        return child

    def _flush_shadow(self) -> None:
        totals, self._shadow_totals = self._shadow_totals, {}
        if totals:
            store = rollout_store()
            for version_id, (compared, agreed, ttft, cost) in totals.items():
                store.add_shadow_comparison(
                    version_id=version_id,
                    compared=int(compared),
                    agreed=int(agreed),
                    ttft_delta_ms=ttft,
                    cost_delta_usd=cost,
                )

    def record_outcome(
        self,
        decision_id: str,
        *,
        ok: bool,
        ttft_ms: float | None = None,
        e2e_ms: float | None = None,
        caller: str = "",
        served_node: str | None = None,
        ttft_target_ms: float | None = None,
        prefill_ok: bool | None = None,
    ) -> dict[str, Any]:
        """An outcome report for one of this process's decisions (`Outcomes.record`)."""
        self.ensure_started()
        return self.outcomes.record(
            decision_id,
            ok=ok,
            ttft_ms=ttft_ms,
            e2e_ms=e2e_ms,
            caller=caller,
            served_node=served_node,
            ttft_target_ms=ttft_target_ms,
            prefill_ok=prefill_ok,
        )

    # -- breakers --------------------------------------------------------------------------
    def _breaker_moved(self, node: str, before: str, after: str, why: str) -> None:
        if after == OPEN:
            BREAKER_TRIPS.labels(node=node).inc()
        at = utcnow()
        logger.info("breaker %s: %s -> %s (%s)", node, before, after, why)
        self.recorder.later(
            lambda: breaker_move_record(node=node, before=before, after=after, why=why, at=at)
        )


def _freeze_heap() -> None:
    """Move every object alive now (Django, numpy, torch, the fleet's columns, the loaded
    policies) into the collector's permanent generation (`gc.freeze`).

    A full collection scans every tracked object. With the ~290,000 a serving process holds
    after start-up, it paused the process 330-925 ms, four times in 40 s of back-to-back
    decisions (in process, 2 busy cores); with the heap frozen after start-up the same run's
    full collections paused it 4-27 ms. Garbage made before the freeze is collected first."""
    gc.collect()
    gc.freeze()


def _count_fallback(reason: str) -> None:
    """`locus_fallbacks_total{reason}`: the guard's fallbacks, counted on the console side so
    `optimizer.decide` stays free of Prometheus."""
    FALLBACKS.labels(reason=reason).inc()


def _splitter() -> Splitter | None:
    """The split stage LOCUS_SPLIT_STAGE names (none when empty)."""
    name = settings.LOCUS_SPLIT_STAGE
    if not name:
        return None
    return get_splitter(name, threshold_tokens=settings.LOCUS_SPLIT_THRESHOLD_TOKENS)


def _breaker_config() -> BreakerConfig:
    overrides = getattr(settings, "LOCUS_BREAKER", {})
    return BreakerConfig(**overrides)


_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                _runtime = Runtime()
    return _runtime


def current_runtime() -> Runtime | None:
    """The process's engine if one was started, without starting one."""
    return _runtime


def reset_runtime() -> None:
    """Forget the process's engine (tests, or after settings change)."""
    global _runtime
    with _runtime_lock:
        if _runtime is not None:
            _runtime.recorder.stop(timeout=1.0)
            if _runtime.shared_view is not None:
                _runtime.shared_view.stop()
        _runtime = None
