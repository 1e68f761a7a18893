"""Liveness and readiness probes for load balancers and orchestrators.

/healthz answers 200 while the process can serve HTTP at all (no dependencies checked).
/readyz answers 200 when the database answers, the Celery broker accepts a connection, the
API key ring has loaded (until then keys answer 503), the decision engine holds an inventory
snapshot and its recorder is not stalled (records waiting with nothing written for
LOCUS_RECORDER_STALLED_SECONDS); otherwise 503 with which check failed. Decisions
keep being served while the database or Redis is down (from the last snapshot), so a load
balancer should route on /healthz and alert on /readyz.

A failed check's raw error names hosts, ports and users, so only a signed-in user with a role
sees it; anyone else (the probe, the internet) gets a generic line. The error is logged when a
check starts failing, and a recovery line when it passes again (not on every probe).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from console.access.keyring import keyring
from console.access.roles import roles_of
from console.celery import app
from console.placement.engine.runtime import current_runtime, runtime

logger = logging.getLogger(__name__)
CHECK_TIMEOUT_S = 2.0
GENERIC_ERROR = "unavailable (details in the server log)"
_failing: set[str] = set()  # checks failing at the last probe of this process


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _broker() -> str:
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_S)
    return "ok"


def _snapshot() -> str:
    rt = runtime()
    rt.ensure_started()
    snapshot = rt.engine.snapshot
    if snapshot is None:
        raise RuntimeError("no snapshot yet")
    age = snapshot.age_s()
    limit = max(30.0, 10 * settings.LOCUS_SNAPSHOT_REFRESH_SECONDS)
    if age > limit:
        raise RuntimeError(
            f"snapshot is {age:.0f}s old (refresh failing: {rt.last_refresh_error or 'unknown'})"
        )
    return f"ok ({len(snapshot.topology.nodes)} nodes, {age:.1f}s old)"


def _keyring() -> str:
    if not keyring.loaded:
        keyring.reload()  # the first probe loads it; a failure leaves it unloaded
    if not keyring.loaded:
        raise RuntimeError("API keys not loaded yet (the database is unreachable)")
    return "ok"


def _recorder() -> str:
    serving = current_runtime()
    if serving is None:
        return "ok (idle)"
    recorder = serving.recorder
    stalled = recorder.stalled_s()
    if stalled > settings.LOCUS_RECORDER_STALLED_SECONDS:
        raise RuntimeError(
            f"{recorder.backlog()} decision records and outcomes waiting, nothing written for "
            f"{stalled:.0f}s (last error: {recorder.stats.last_error or 'none'})"
        )
    return f"ok ({recorder.backlog()} waiting, {recorder.stats.refused} refused)"


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, Any] = {}
    ready = True
    detailed = bool(roles_of(request.user))
    for name, check in (
        ("database", _database),
        ("broker", _broker),
        ("keyring", _keyring),
        ("snapshot", _snapshot),
        ("recorder", _recorder),
    ):
        started = time.perf_counter()
        try:
            checks[name] = {"status": check()}
            if name in _failing:
                _failing.discard(name)
                logger.warning("readiness check %s passes again", name)
        except Exception as exc:  # each failure is reported, not raised
            if name not in _failing:
                _failing.add(name)
                logger.warning("readiness check %s failed: %s", name, exc)
            checks[name] = {"status": "failed", "error": str(exc) if detailed else GENERIC_ERROR}
            ready = False
        checks[name]["seconds"] = round(time.perf_counter() - started, 4)
    return JsonResponse({"ready": ready, "checks": checks}, status=200 if ready else 503)
