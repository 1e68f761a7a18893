"""Why a node looks the way it does: the reads behind its page (GET /api/v1/nodes/{name}/why).

An SRE who sees a red node asks, in this order: is it in an SLA breach (and which), is its
breaker open, is its telemetry stale, did someone drain or cordon it, and what happened to
the requests sent to it lately. Each answer comes from its own store (breaches and their
burning pairs, this process's breakers and their shared history, the latest-state cache,
the inventory's audit trail, the decision records); `node_why` reads them once and says in
`reasons` which of them explain the node's colour, worst first.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q

from console.inventory.selectors import node_by_name, node_state_changes
from console.placement.breach_flags import picked_in_breach
from console.placement.engine.runtime import current_runtime
from console.placement.models import BreakerEvent, DecisionRecord
from optimizer.decide.explain import estimates_against_runner_up
from telemetry.selectors import BreachInterval, breach_intervals, latest_node_state

RECENT_DECISIONS = 20
# Resolved breaches stay on the page this long: "it was in a breach an hour ago" explains a
# node's recent history as much as an open one.
BREACH_LOOKBACK = timedelta(hours=24)
_LEVELS = {"bad": 0, "warn": 1, "info": 2}


def node_why(*, name: str, now: datetime, window_s: float = 900.0) -> dict[str, Any] | None:
    """Everything the node page explains, or None if there is no such node."""
    node = node_by_name(name)
    if node is None:
        return None
    breaches = breach_intervals(nodes=[name], since=now - BREACH_LOOKBACK, until=now)
    decisions = list(DecisionRecord.objects.filter(node=name)[:RECENT_DECISIONS])
    if decisions:
        # The flags of the recent decisions need the breaches over their span too.
        oldest = min(d.created_at for d in decisions)
        if oldest < now - BREACH_LOOKBACK:
            breaches = breach_intervals(nodes=[name], since=oldest, until=now)
    telemetry = _telemetry(name, now)
    breaker = _breaker(name)
    outcomes = _outcomes(name, now=now, window_s=window_s, breaches=breaches)
    changes = node_state_changes(name)
    answer = {
        "node": name,
        "state": node.state,
        "breaches": [_breach(b) for b in reversed(breaches) if b.resolved_at is None
                     or b.resolved_at > now - BREACH_LOOKBACK],
        "breaker": breaker,
        "telemetry": telemetry,
        "state_changes": [
            {"action": c.action, "from_state": c.from_state, "to_state": c.to_state,
             "reason": c.reason, "actor": c.actor, "at": c.at}
            for c in changes
        ],
        "outcomes": outcomes,
        "recent_decisions": [_decision(d, breaches) for d in decisions],
    }  # fmt: skip
    answer["reasons"] = _reasons(answer, node_reason=node.state_reason)
    return answer


def _breach(b: BreachInterval) -> dict[str, Any]:
    return {
        "breach_id": b.breach_id,
        "slo": b.slo,
        "severity": b.severity,
        "metric": b.metric,
        "open": b.resolved_at is None,
        "opened_at": b.opened_at,
        "resolved_at": b.resolved_at,
        "burn_rate": b.burn_rate,
        "requests": b.requests,
        "bad": b.bad,
    }


def _telemetry(name: str, now: datetime) -> dict[str, Any] | None:
    state = latest_node_state(name)
    if state is None:
        return None
    age = (now - state.updated_at).total_seconds()
    stale_after = settings.LOCUS_TELEMETRY_STALE_SECONDS
    return {
        "updated_at": state.updated_at,
        "age_s": round(max(0.0, age), 1),
        "stale_after_s": stale_after,
        "stale": age > stale_after,
    }


def _breaker(name: str) -> dict[str, Any]:
    """This server process's breaker for the node (each process keeps its own: the engine
    never waits on a shared store), and the node's last breaker move from any process."""
    rt = current_runtime()
    last = BreakerEvent.objects.filter(node=name).first()
    return {
        "state": rt.breakers.snapshot().get(name, "closed") if rt is not None else None,
        "last_change": None
        if last is None
        else {"from_state": last.from_state, "to_state": last.to_state,
              "reason": last.reason, "at": last.at},
    }  # fmt: skip


def _outcomes(
    name: str, *, now: datetime, window_s: float, breaches: list[BreachInterval]
) -> dict[str, Any]:
    recent = DecisionRecord.objects.filter(
        node=name, created_at__gte=now - timedelta(seconds=window_s)
    )
    counts = recent.aggregate(
        decisions=Count("id"),
        outcomes=Count("id", filter=Q(outcome_at__isnull=False)),
        failed=Count("id", filter=Q(ok=False)),
        slo_missed=Count("id", filter=Q(slo_met=False)),
    )
    in_breach = sum(
        1
        for at in recent.values_list("created_at", flat=True)
        if any(b.open_at(at) for b in breaches)
    )
    return {"window_s": window_s, **counts, "picked_in_breach": in_breach}


def _decision(d: DecisionRecord, breaches: list[BreachInterval]) -> dict[str, Any]:
    flag = picked_in_breach(node=d.node, at=d.created_at, breaches=breaches)
    return {
        "id": d.id,
        "created_at": d.created_at,
        "model": d.model,
        "slo": d.slo,
        "policy": f"{d.policy_name}@{d.policy_version}",
        "arm": d.arm,
        "ok": d.ok,
        "slo_met": d.slo_met,
        "ttft_ms": d.ttft_ms,
        "e2e_ms": d.e2e_ms,
        "picked_in_breach": flag["breach_id"] if flag else None,
        "against_runner_up": _against_runner_up(d.receipt),
    }


def _against_runner_up(receipt: object) -> dict[str, Any] | None:
    """The pick against the runner-up in one line's worth: which estimates were worse and,
    for a learned decision whose receipt keeps it, the feature that moved it most."""
    candidates = receipt.get("candidates") if isinstance(receipt, dict) else None
    if not isinstance(candidates, list) or len(candidates) < 2:
        return None
    worse = estimates_against_runner_up(candidates)
    learned = receipt.get("learned") if isinstance(receipt, dict) else None
    features = learned.get("features") if isinstance(learned, dict) else None
    return {
        "runner_up": candidates[1].get("node"),
        "worse": worse["worse"] if worse else [],
        "top_feature": features[0]["feature"] if features else None,
    }


def _reason(kind: str, level: str, text: str) -> dict[str, str]:
    return {"kind": kind, "level": level, "text": text}


def _reasons(answer: dict[str, Any], *, node_reason: str) -> list[dict[str, str]]:
    """Plain sentences, worst first: why the node is the colour it is."""
    reasons: list[dict[str, str]] = []
    for b in answer["breaches"]:
        if b["open"]:
            burn = f", burning {b['burn_rate']:.1f}× its budget" if b["burn_rate"] else ""
            text = (
                f"In an open {b['severity'] or 'SLA'} breach of {b['slo']} "
                f"(#{b['breach_id']}) since {b['opened_at']:%H:%M:%S} UTC{burn}."
            )
            reasons.append(_reason("breach", "bad" if b["severity"] == "page" else "warn", text))
    breaker = answer["breaker"]["state"]
    if breaker in ("open", "half_open"):
        level = "bad" if breaker == "open" else "warn"
        text = f"Its circuit breaker is {breaker.replace('_', '-')}."
        reasons.append(_reason("breaker", level, text))
    telemetry = answer["telemetry"]
    if telemetry is None:
        reasons.append(_reason("stale", "warn", "It never reported telemetry."))
    elif telemetry["stale"]:
        text = (
            f"Its telemetry is {telemetry['age_s']:.0f} s old "
            f"(stale after {telemetry['stale_after_s']:.0f} s)."
        )
        reasons.append(_reason("stale", "warn", text))
    if answer["state"] != "active":
        why = f": “{node_reason}”" if node_reason else ""
        reasons.append(_reason("state", "warn", f"It is {answer['state']}{why}."))
    outcomes = answer["outcomes"]
    if outcomes["outcomes"] and (outcomes["failed"] or outcomes["slo_missed"]):
        text = (
            f"Of its {outcomes['outcomes']} reported outcomes in the last "
            f"{outcomes['window_s'] / 60:.0f} min, {outcomes['failed']} failed and "
            f"{outcomes['slo_missed']} missed their SLO."
        )
        reasons.append(_reason("outcomes", "info", text))
    return sorted(reasons, key=lambda r: _LEVELS[r["level"]])
