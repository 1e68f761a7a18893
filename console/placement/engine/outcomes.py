"""The outcomes of this process's decisions: the recent decisions kept in memory, and each
decision's one outcome report fed to its node's breaker, its record and the SLO windows.

`Runtime` owns one `Outcomes` (docs/architecture.md rule 2); the placements API's outcome
endpoint and the gateway's endpoint picker report through `Runtime.record_outcome`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from console.placement.engine.core import Decision
from console.placement.engine.recorder import Recorder
from console.placement.engine.writer import utcnow
from console.placement.metrics import OUTCOMES
from console.placement.selectors import RecentDecision, recent_decision
from console.placement.services import slo_windows_feed
from optimizer.decide.filters.breakers import BreakerBoard
from optimizer.decide.state.snapshot import Snapshot

RECENT_DECISIONS = 100_000


class DecisionNotFound(LookupError):
    pass


class OutcomeAlreadyRecorded(LookupError):
    """A decision takes one outcome: a repeat would feed its breaker and SLO windows twice."""


class Outcomes:
    """Recent decisions and their outcomes, for one server process."""

    def __init__(
        self,
        *,
        recorder: Recorder,
        breakers: BreakerBoard,
        snapshot: Callable[[], Snapshot | None],
    ) -> None:
        self._recorder = recorder
        self._breakers = breakers
        self._snapshot = snapshot
        # Recent decisions as (node, slo, model, decided_by) tuples of strings, which the
        # collector stops tracking (a RecentDecision object per entry kept 100,000 objects in
        # every full collection's scan: docs/decision-kernel.md "Garbage-collection pauses");
        # `_reported` holds those among them with an outcome. Older decisions are read from
        # their records.
        self._recent: OrderedDict[str, tuple[str, str | None, str, str, bool, str | None]] = (
            OrderedDict()
        )
        self._reported: set[str] = set()
        self._lock = threading.Lock()

    def remember(self, decision: Decision) -> None:
        """Keep a placed decision, so its outcome report needs no database read."""
        assert decision.node is not None
        self._recent[decision.decision_id] = (
            decision.node,
            decision.request.slo,
            decision.request.model,
            decision.caller,
            False,
            decision.prefill_node,
        )
        while len(self._recent) > RECENT_DECISIONS:
            self._reported.discard(self._recent.popitem(last=False)[0])

    def record(
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
        """Feed an outcome to the node's breaker, the decision record and the SLO windows.

        Only the identity that asked for the decision may report its outcome: another one
        could trip any node's breaker or skew SLO windows with decisions it never made.
        (Records from before decisions named their caller have no owner and take anyone's.)
        A gateway that retried down the fallbacks names the node that served
        (`served_node`); the outcome is that node's. `ttft_target_ms` is a caller's own TTFT
        target, held on top of the SLO's (the gateway's `x-slo-ttft-ms`, docs/gateway.md).
        A split decision's outcome is its decode node's; its prefill node's breaker hears
        `prefill_ok` when the caller saw the prefill phase on its own (the router runs the two
        phases itself, docs/router.md), nothing otherwise (behind llm-d's sidecar a failed
        prefill is not told apart from a failed decode)."""
        entry = self._recent.get(decision_id)
        recent = (
            RecentDecision(*entry)
            if entry is not None
            else recent_decision(decision_id=decision_id)
        )
        if recent is None or (recent.decided_by and recent.decided_by != caller):
            raise DecisionNotFound(decision_id)
        with self._lock:
            if recent.has_outcome or decision_id in self._reported:
                raise OutcomeAlreadyRecorded(decision_id)
            if entry is not None:
                self._reported.add(decision_id)
        if served_node is not None and served_node != recent.node:
            recent = dataclasses.replace(recent, node=served_node)
        snapshot = self._snapshot()
        slo = snapshot.topology.slo_by_name.get(recent.slo) if snapshot and recent.slo else None
        slo_met = ok and (
            slo is None
            or (
                (ttft_ms is None or ttft_ms <= slo.ttft_p95_ms)
                and (e2e_ms is None or e2e_ms <= slo.e2e_p95_ms)
            )
        )
        if ttft_target_ms is not None and (ttft_ms is None or ttft_ms > ttft_target_ms):
            slo_met = False
        self._breakers.record(recent.node, ok)
        if recent.prefill_node is not None and prefill_ok is not None:
            self._breakers.record(recent.prefill_node, prefill_ok)
        OUTCOMES.labels(ok="true" if ok else "false").inc()
        at = utcnow()
        self._recorder.outcome(
            {
                "id": decision_id,
                "ttft_ms": ttft_ms,
                "e2e_ms": e2e_ms,
                "ok": ok,
                "slo_met": slo_met,
                "outcome_at": at,
            }
        )
        if recent.slo:
            self._recorder.later(
                lambda: slo_windows_feed(
                    recent=recent, ttft_ms=ttft_ms, e2e_ms=e2e_ms, ok=ok, at=at
                )
            )
        answer: dict[str, Any] = {
            "decision_id": decision_id,
            "node": recent.node,
            "slo_met": slo_met,
            "breaker": self._breakers.state(recent.node),
        }
        if recent.prefill_node is not None:
            answer["prefill_node"] = recent.prefill_node
        return answer
