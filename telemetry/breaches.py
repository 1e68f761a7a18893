"""SLA breaches: each SLO's burn-rate rules, evaluated on its own requests' outcomes.

`outcome_record` counts a reported outcome in its SLO's buckets (telemetry/slo_windows.py) and,
at most once a LOCUS_SLO_EVAL_INTERVAL_SECONDS of outcome time per process and SLO, evaluates
that SLO; the `telemetry.evaluate_slos` beat task evaluates every SLO on the worker's clock, so
breaches also open and resolve while no outcome arrives. What a rule is: telemetry/slo_rules.py.

Per (SLO, SLI, rule) an evaluation at time `now`:
- the rule holds: an open breach is extended (`last_firing_at`, `worst`, its burning (model,
  node) pairs); otherwise, once it has held for at least the rule's hold time (its start is
  kept in the store), a breach opens at `now`;
- it does not hold: the start is forgotten, and an open breach whose rule last held at least
  the rule's clear time ago resolves at `now`.
So `opened_at <= last_firing_at <= resolved_at - clear` whichever process evaluates, in
whatever order (a database constraint keeps resolved_at >= opened_at as well), and a rule that
flaps within its clear time keeps one breach open.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime

from django.db import IntegrityError, transaction

from console.inventory.selectors import node_sites, slo_list
from console.live.events import send_event
from telemetry import conf, slo_rules, slo_windows
from telemetry.metrics import SLO_REQUESTS
from telemetry.models import BreachNode, BreachStatus, SlaBreach
from telemetry.slo_rules import BurnRule, Judgement, Sli, SloTargets
from telemetry.store import get_store

_SEP = "\x1f"
MAX_NODES = 20  # (model, node) pairs kept on a breach


class _SloCache:
    """SLO targets by name, reloaded every 30 s or on a miss (at most every 5 s)."""

    def __init__(self) -> None:
        self._targets: dict[str, SloTargets] = {}
        self._at = 0.0
        self._lock = threading.Lock()

    def _reload(self) -> None:
        self._targets = {
            s.name: SloTargets(s.ttft_p95_ms, s.e2e_p95_ms, s.max_error_rate) for s in slo_list()
        }
        self._at = time.monotonic()

    def all(self) -> dict[str, SloTargets]:
        with self._lock:
            if time.monotonic() - self._at > 30.0:
                self._reload()
            return dict(self._targets)

    def get(self, name: str) -> SloTargets | None:
        with self._lock:
            age = time.monotonic() - self._at
            if age > 30.0 or (name not in self._targets and age > 5.0):
                self._reload()
            return self._targets.get(name)

    def clear(self) -> None:
        with self._lock:
            self._at = 0.0
            self._targets = {}


slo_cache = _SloCache()
# Per SLO, the outcome time (epoch seconds) of this process's last evaluation after an outcome.
_last_eval: dict[str, float] = {}


def outcome_record(
    *,
    slo: str,
    model: str,
    node: str,
    ttft_ms: float | None,
    e2e_ms: float | None,
    ok: bool,
    at: datetime,
) -> list[SlaBreach]:
    """Count what happened to one placed request; returns the breaches an evaluation it
    triggered opened or resolved."""
    targets = slo_cache.get(slo)
    if targets is None:
        return []
    within = targets.within(ok=ok, ttft_ms=ttft_ms, e2e_ms=e2e_ms)
    SLO_REQUESTS.labels(slo=slo, result="good" if within else "missed" if ok else "failed").inc()
    slo_windows.record(slo=slo, model=model, node=node, within=within, ok=ok, at=at)
    epoch, last = at.timestamp(), _last_eval.get(slo)
    if last is not None and 0.0 <= epoch - last < conf.slo_eval_interval_seconds():
        return []
    _last_eval[slo] = epoch
    return breaches_evaluate(now=at, slos=[slo])


def breaches_evaluate(*, now: datetime, slos: list[str] | None = None) -> list[SlaBreach]:
    """Evaluate the burn-rate rules of `slos` (default: every SLO) at `now`; returns the
    breaches opened or resolved."""
    targets = slo_cache.all()
    names = sorted(targets if slos is None else set(slos) & set(targets))
    if not names:
        return []
    judged = slo_windows.verdicts(targets={slo: targets[slo] for slo in names}, now=now)
    opened = {
        (b.slo, b.metric, b.severity): b
        for b in SlaBreach.objects.filter(
            status=BreachStatus.OPEN,
            slo__in=names,
            severity__in=[r.severity for r in slo_rules.rules()],
        )
    }
    store = get_store()
    pending_key = f"{store.prefix}:slo-pending"
    pending = store.hgetall_many([pending_key])[0]
    started: dict[str, str] = {}
    stopped: list[str] = []
    changed: list[SlaBreach] = []
    for slo, sli, rule, verdict in ((v.slo, v.sli, v.rule, v.judgement) for v in judged):
        field = _SEP.join((slo, sli.name, rule.severity))
        breach = opened.get((slo, sli.name, rule.severity))
        if not verdict.holds:
            if field in pending:
                stopped.append(field)
            if breach is not None and _resolve(breach.pk, rule, now):
                breach.refresh_from_db()
                changed.append(breach)
            continue
        if breach is not None:
            _extend(breach, slo, sli, rule, verdict, now)
            continue
        since = float(pending[field]) if field in pending else now.timestamp()
        if field not in pending:
            started[field] = repr(since)
        if now.timestamp() - since >= rule.hold_s:
            changed.append(_open(slo, sli, rule, verdict, now))
    if started:
        store.hset(pending_key, started)
    if stopped:
        store.hdel(pending_key, stopped)
    return changed


def _burning(slo: str, sli: Sli, rule: BurnRule, now: datetime) -> list[BreachNode]:
    """The (model, node) pairs that spent the SLO's budget at least as fast as the rule over
    its long window (unsaved), most bad requests first."""
    burning = []
    for (model, node), counts in slo_windows.read_by_node(
        slo=slo, now=now, seconds=rule.long_s
    ).items():
        bad = counts.bad_for(sli.name)
        rate = slo_rules.burn_rate(bad=bad, requests=counts.requests, sli=sli)
        if rate is not None and rate > rule.factor:
            burning.append(
                BreachNode(node=node, model=model, requests=counts.requests, bad=bad,
                           burn_rate=rate)
            )  # fmt: skip
    burning.sort(key=lambda n: (-n.bad, n.node, n.model))
    burning = burning[:MAX_NODES]
    sites = node_sites({n.node for n in burning})
    for pair in burning:
        pair.site = sites.get(pair.node, "")
    return burning


def _burning_replace(breach: SlaBreach, burning: list[BreachNode]) -> None:
    breach.burning.all().delete()
    for pair in burning:
        pair.breach = breach
    BreachNode.objects.bulk_create(burning)


def _event(breach: SlaBreach, now: datetime) -> None:
    send_event(
        "breach",
        {
            "id": breach.pk,
            "status": breach.status,
            "slo": breach.slo,
            "model": breach.model,
            "node": breach.node,
            "metric": breach.metric,
            "severity": breach.severity,
            "objective": breach.objective,
            "observed": breach.observed,
            "threshold": breach.threshold,
            "nodes": sorted(set(breach.burning.values_list("node", flat=True))),
            "opened_at": breach.opened_at.isoformat(),
            "ts": now.isoformat(),
        },
    )


def _open(slo: str, sli: Sli, rule: BurnRule, verdict: Judgement, now: datetime) -> SlaBreach:
    assert verdict.long_burn is not None
    try:
        with transaction.atomic():
            breach = SlaBreach.objects.create(
                slo=slo,
                metric=sli.name,
                severity=rule.severity,
                status=BreachStatus.OPEN,
                objective=sli.objective,
                threshold=rule.factor,
                observed=verdict.long_burn,
                worst=verdict.long_burn,
                samples=verdict.requests,
                long_window_s=rule.long_s,
                short_window_s=rule.short_s,
                opened_at=now,
                last_firing_at=now,
            )
            _burning_replace(breach, _burning(slo, sli, rule, now))
            _event(breach, now)
            return breach
    except IntegrityError:  # opened meanwhile by another process's evaluation
        breach = SlaBreach.objects.get(
            slo=slo, metric=sli.name, severity=rule.severity, status=BreachStatus.OPEN
        )
        _extend(breach, slo, sli, rule, verdict, now)
        return breach


def _extend(
    breach: SlaBreach, slo: str, sli: Sli, rule: BurnRule, verdict: Judgement, now: datetime
) -> None:
    """The rule still holds: push the clear time back, keep the worst burn rate."""
    assert verdict.long_burn is not None
    rows = SlaBreach.objects.filter(pk=breach.pk, status=BreachStatus.OPEN)
    with transaction.atomic():
        if rows.filter(last_firing_at__lt=now).update(last_firing_at=now):
            _burning_replace(breach, _burning(slo, sli, rule, now))
        rows.filter(worst__lt=verdict.long_burn).update(worst=verdict.long_burn)


def _resolve(breach_id: int, rule: BurnRule, now: datetime) -> bool:
    """Resolve the breach at `now` if its rule last held at least the clear time before."""
    with transaction.atomic():
        breach = SlaBreach.objects.select_for_update().filter(pk=breach_id).first()
        if breach is None or breach.status != BreachStatus.OPEN:
            return False
        last = breach.last_firing_at or breach.opened_at
        if (now - last).total_seconds() < rule.clear_s:
            return False
        breach.status = BreachStatus.RESOLVED
        breach.resolved_at = now
        breach.save(update_fields=["status", "resolved_at"])
        _event(breach, now)
        return True
