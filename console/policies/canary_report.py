"""What `GET /api/v1/rollout` says about a running canary: is it winning or losing, at what
cost, for how long, and what the watchdog makes of it (the Policies page's rollout panel).

- Verdict: from Newcombe's 95% interval for the canary's SLO attainment minus the active
  arm's (`optimizer.stats.difference_interval`; R. G. Newcombe, Statistics in Medicine 17,
  873-890, 1998, method 10): "winning" when the whole interval is above zero, "losing" when
  it is all below, else "undecided". The interval answers "which arm is better"; the
  watchdog's rollback rule is another question (worse by more than a margin, one-sided
  z-test at `LOCUS_CANARY_CONFIDENCE`), so a "losing" canary may still be within its margin.
- Cost: one headline, the attributed cost per 1,000 served requests
  (console/policies/attribution.py: priced from what was measured, batch included); the
  decision-time estimate is kept as a secondary figure, since it cannot see the batch a
  consolidating policy fills (docs/operations.md "Watching a canary").
- Watchdog: what it would decide on the outcomes it reads now (`watchdog_judgement`), when it
  last checked (the cache it leaves its result in) and when it checks next (its beat period).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from console.policies.canary import (
    WATCHDOG_CACHE_KEY,
    ArmStats,
    arm_stats,
    canary_vs_active,
    watchdog_judgement,
    watchdog_since,
)
from console.policies.models import PolicyVersion


def verdict(compared: dict[str, Any] | None) -> dict[str, Any]:
    """ "winning", "losing" or "undecided" from the attainment difference's 95% interval."""
    if compared is None:
        return {"verdict": "undecided", "why": "both arms need outcomes first"}
    low, high = compared["slo_attainment_difference_95"]
    if low > 0:
        return {"verdict": "winning", "why": "the 95% interval lies above zero"}
    if high < 0:
        return {"verdict": "losing", "why": "the 95% interval lies below zero"}
    return {"verdict": "undecided", "why": "the 95% interval contains zero"}


def _ratio(canary: float | None, active: float | None) -> float | None:
    return canary / active if canary is not None and active else None


def cost_summary(stats: dict[str, ArmStats]) -> dict[str, Any]:
    """The headline cost (attributed, per 1k served requests) of each arm and the canary's
    ratio to the active arm's, with the estimate's ratio beside it."""
    canary, active = stats.get("canary", ArmStats()), stats.get("active", ArmStats())
    return {
        "headline": "attributed_usd_per_1k",
        "canary_usd_per_1k": canary.attributed_usd_per_1k,
        "active_usd_per_1k": active.attributed_usd_per_1k,
        "canary_vs_active": _ratio(canary.attributed_usd_per_1k, active.attributed_usd_per_1k),
        "estimated_canary_vs_active": _ratio(canary.usd_per_1k, active.usd_per_1k),
    }


def watchdog_state(canary: PolicyVersion, stats: dict[str, ArmStats], now: datetime) -> Any:
    """The watchdog's judgement on the outcomes it reads now, its last check of this canary
    and its next one."""
    schedule: dict[str, Any] = settings.CELERY_BEAT_SCHEDULE["policies-canary-watchdog"]
    period_s = float(schedule["schedule"])
    state, said = watchdog_judgement(
        stats.get("canary", ArmStats()), stats.get("active", ArmStats())
    )
    last = cache.get(WATCHDOG_CACHE_KEY)
    last_at = None
    if isinstance(last, dict) and last.get("version_id") == canary.pk:
        last_at = datetime.fromisoformat(last["at"])
    next_at = last_at + timedelta(seconds=period_s) if last_at is not None else None
    return {
        "state": state,
        "said": said,
        "period_s": period_s,
        "last_check_at": last_at.isoformat() if last_at else None,
        "last_said": last.get("said") if last_at else None,
        # A beat that missed its time (a stopped worker) has no next check to promise.
        "next_check_at": next_at.isoformat() if next_at and next_at >= now else None,
        "window_s": settings.LOCUS_CANARY_WINDOW_SECONDS,
        "min_outcomes": settings.LOCUS_CANARY_MIN_OUTCOMES,
    }


def canary_report(canary: PolicyVersion) -> dict[str, Any]:
    """A running canary's figures since it started: each arm, the comparison, the verdict,
    the headline cost, the elapsed time and the watchdog."""
    now = timezone.now()
    started = canary.state_changed_at or now
    stats = arm_stats(started, attribute=True)
    since = watchdog_since(canary)
    judged = stats if since <= started else arm_stats(since)
    body: dict[str, Any] = {
        "canary_id": canary.pk,
        "started_at": started.isoformat(),
        "elapsed_s": max(0.0, (now - started).total_seconds()),
        "arms": {
            arm: {
                "outcomes": st.outcomes,
                "slo_attainment": st.attainment,
                "breached_groups": st.breached,
                "groups": st.groups,
                "estimated_usd_per_1k": st.usd_per_1k,
                "attributed_usd_per_1k": st.attributed_usd_per_1k,
                "attributed_outcomes": st.attributed,
            }
            for arm, st in stats.items()
        },
        "cost": cost_summary(stats),
        "watchdog": watchdog_state(canary, judged, now),
    }
    compared = canary_vs_active(stats)
    if compared is not None:
        body["canary_vs_active"] = compared
    body["verdict"] = verdict(compared)
    return body


def evaluation_defaults() -> dict[str, Any]:
    """The loads and seeds an evaluation runs when the request names none."""
    return {"loads": settings.LOCUS_EVALUATION_LOADS, "seeds": settings.LOCUS_EVALUATION_SEEDS}
