"""SLA breaches: sliding windows per (SLO, model, node) held to the SLO's targets.

A breach opens when a window with at least LOCUS_SLO_MIN_SAMPLES observations has its p95 TTFT,
p95 end-to-end latency or error rate above the SLO's target, and resolves when the window is
back within it (or empty). Per observation this costs store round trips only: the open
breaches are indexed in the store, so the database is written on transitions alone.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction

from console.inventory.selectors import slo_list
from console.live.events import send_event
from telemetry import conf, slo_windows
from telemetry.models import BreachMetric, BreachStatus, SlaBreach
from telemetry.store import get_store


@dataclass(frozen=True)
class SloTargets:
    ttft_p95_ms: float
    e2e_p95_ms: float
    max_error_rate: float


class _SloCache:
    """SLO targets by name, reloaded every 30 s or on a miss (at most every 5 s)."""

    def __init__(self) -> None:
        self._targets: dict[str, SloTargets] = {}
        self._at = 0.0
        self._lock = threading.Lock()

    def _reload(self) -> None:
        default = conf.slo_default_max_error_rate()
        self._targets = {
            s.name: SloTargets(
                s.ttft_p95_ms,
                s.e2e_p95_ms,
                default if s.max_error_rate is None else s.max_error_rate,
            )
            for s in slo_list()
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
    """Record what happened to one placed request; returns breaches opened or resolved."""
    key = slo_windows.window_key(slo, model, node)
    slo_windows.record(key=key, at=at, ttft_ms=ttft_ms, e2e_ms=e2e_ms, ok=ok)
    return breaches_evaluate(slo=slo, model=model, node=node, now=at)


def latencies_record(
    *, node: str, at: datetime, latencies: list[tuple[str, str, float, float]]
) -> list[SlaBreach]:
    """Feed exporter histogram observations (kind, model, ms, count) into the windows.

    Exporters do not know a request's SLO, so the node's latencies count against every SLO
    (or those in LOCUS_TELEMETRY_SLOS).
    """
    names = conf.telemetry_slos() or sorted(slo_cache.all())
    touched: set[tuple[str, str]] = set()
    for slo in names:
        for kind, model, ms, count in latencies:
            n = round(count)
            if n <= 0:
                continue
            key = slo_windows.window_key(slo, model, node)
            if kind == "ttft":
                slo_windows.record(key=key, at=at, ttft_ms=ms, count=n)
            else:
                slo_windows.record(key=key, at=at, e2e_ms=ms, count=n)
            touched.add((slo, model))
    changed: list[SlaBreach] = []
    for slo, model in sorted(touched):
        changed += breaches_evaluate(slo=slo, model=model, node=node, now=at)
    return changed


def breaches_evaluate(*, slo: str, model: str, node: str, now: datetime) -> list[SlaBreach]:
    """Open or resolve the window's breaches; at most once a LOCUS_SLO_EVAL_INTERVAL_SECONDS."""
    targets = slo_cache.get(slo)
    if targets is None:
        return []
    key = slo_windows.window_key(slo, model, node)
    tick = time.monotonic()
    if tick - _last_eval.get(key, -1e9) < conf.slo_eval_interval_seconds():
        return []
    _last_eval[key] = tick
    stats = slo_windows.read(key=key, now=now)
    checks = (
        (BreachMetric.TTFT_P95, stats.ttft_p95_ms, stats.ttft_count, targets.ttft_p95_ms),
        (BreachMetric.E2E_P95, stats.e2e_p95_ms, stats.e2e_count, targets.e2e_p95_ms),
        (BreachMetric.ERROR_RATE, stats.error_rate, stats.outcomes, targets.max_error_rate),
    )
    store = get_store()
    index_key = f"{store.prefix}:breaches"
    index = store.hgetall_many([index_key])[0]
    changed: list[SlaBreach] = []
    for metric, observed, count, threshold in checks:
        field = f"{key}|{metric}"
        open_id = index.get(field)
        if open_id is None:
            if observed is not None and count >= conf.slo_min_samples() and observed > threshold:
                breach = _open(slo, model, node, str(metric), observed, threshold, count, now)
                store.hset(index_key, {field: str(breach.pk)})
                changed.append(breach)
        elif observed is None or observed <= threshold:
            store.hdel(index_key, [field])
            resolved = _resolve(int(open_id), now, observed)
            if resolved is not None:
                changed.append(resolved)
        else:
            SlaBreach.objects.filter(pk=int(open_id), worst__lt=observed).update(worst=observed)
    return changed


def _event(breach: SlaBreach, observed: float, now: datetime) -> None:
    send_event(
        "breach",
        {
            "id": breach.pk,
            "status": breach.status,
            "slo": breach.slo,
            "model": breach.model,
            "node": breach.node,
            "metric": breach.metric,
            "observed": observed,
            "threshold": breach.threshold,
            "ts": now.isoformat(),
        },
    )


def _open(
    slo: str,
    model: str,
    node: str,
    metric: str,
    observed: float,
    threshold: float,
    count: int,
    now: datetime,
) -> SlaBreach:
    try:
        with transaction.atomic():
            breach = SlaBreach.objects.create(
                slo=slo,
                model=model,
                node=node,
                metric=metric,
                status=BreachStatus.OPEN,
                threshold=threshold,
                observed=observed,
                worst=observed,
                samples=count,
                opened_at=now,
            )
            _event(breach, observed, now)
            return breach
    except IntegrityError:  # already open (another process, or the store index was lost)
        return SlaBreach.objects.get(
            slo=slo, model=model, node=node, metric=metric, status=BreachStatus.OPEN
        )


def _resolve(breach_id: int, now: datetime, observed: float | None) -> SlaBreach | None:
    with transaction.atomic():
        breach = SlaBreach.objects.select_for_update().filter(pk=breach_id).first()
        if breach is None or breach.status != BreachStatus.OPEN:
            return None
        breach.status = BreachStatus.RESOLVED
        breach.resolved_at = now
        breach.save(update_fields=["status", "resolved_at"])
        _event(breach, breach.worst if observed is None else observed, now)
        return breach
