"""The canary watchdog: compare the canary arm with the active arm on live outcomes and roll
the canary back by itself when it does worse by more than the configured margins.

Two comparisons over the outcomes since the canary started (at most the last
`LOCUS_CANARY_WINDOW_SECONDS`), once both arms have `LOCUS_CANARY_MIN_OUTCOMES` outcomes:
- SLO attainment: the share of outcomes that met every target of their SLO. Rolled back when
  the canary's is lower than the active arm's by more than `LOCUS_CANARY_MAX_ATTAINMENT_DROP`
  and the difference is significant: a one-sided two-proportion z-test at
  `LOCUS_CANARY_CONFIDENCE` (0.99). With the margin alone, a canary exactly as good as the
  active policy was rolled back by sampling noise in 30% of 20-minute canaries at the demo's
  traffic (checks every 30 s from 100 outcomes an arm); with the test, in 4%, while one 2.5
  points worse is still rolled back in 95% (tests/bench/bench_canary_watchdog.py).
- Breaches: each (SLO, model, node) group of an arm with at least `MIN_GROUP` outcomes is in
  breach when its p95 TTFT or p95 end-to-end latency exceeds the SLO target. Arms carry
  different traffic, so the share of breached groups is compared, not the count; rolled back
  when the canary's share exceeds the active arm's by more than
  `LOCUS_CANARY_MAX_BREACH_SHARE_INCREASE` and, groups counted as the units, significantly so
  (the same test): a live demo canary at the active arm's attainment (96.58% against 96.47%)
  was rolled back on 2 breached groups of 10 against 1 of 16, a z of 1.07
  (docs/learned-policy.md "The live canary").
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from statistics import NormalDist
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from console.inventory.selectors import slo_list
from console.placement.models import DecisionRecord
from console.policies.attribution import Served, attributed_costs
from console.policies.choices import PolicyState
from console.policies.models import PolicyVersion
from console.policies.services import policy_transition
from optimizer.stats import difference_interval

MIN_GROUP = 20


@dataclass
class ArmStats:
    outcomes: int = 0
    met: int = 0
    groups: int = 0
    breached: int = 0
    # The picked node's estimated cost (the receipt's first candidate: the engine's own
    # estimate at decision time, the same for both arms) summed over outcomes that have one.
    cost_usd: float = 0.0
    costed: int = 0
    # The attributed cost of served outcomes (console.policies.attribution), when asked for.
    attributed_usd: float = 0.0
    attributed: int = 0

    @property
    def attainment(self) -> float:
        return self.met / self.outcomes if self.outcomes else 0.0

    @property
    def breach_share(self) -> float:
        return self.breached / self.groups if self.groups else 0.0

    @property
    def usd_per_1k(self) -> float | None:
        """Estimated US dollars per 1,000 requests; None without receipts."""
        return self.cost_usd / self.costed * 1000 if self.costed else None

    @property
    def attributed_usd_per_1k(self) -> float | None:
        """Attributed US dollars per 1,000 served requests; None if none could be."""
        return self.attributed_usd / self.attributed * 1000 if self.attributed else None


def canary_vs_active(stats: dict[str, ArmStats]) -> dict[str, Any] | None:
    """The canary's SLO attainment minus the active arm's, with Newcombe's 95% interval
    (optimizer/stats.py); None until both arms have outcomes. The interval treats outcomes as
    independent; against the spread of replayed canaries it is conservative (docs/operations.md,
    "Watching a canary")."""
    canary, active = stats.get("canary"), stats.get("active")
    if canary is None or active is None or not canary.outcomes or not active.outcomes:
        return None
    low, high = difference_interval(canary.met, canary.outcomes, active.met, active.outcomes)
    return {
        "slo_attainment_difference": canary.attainment - active.attainment,
        "slo_attainment_difference_95": [low, high],
    }


def arm_stats(since: object, *, attribute: bool = False) -> dict[str, ArmStats]:
    """Each arm's outcome figures since `since`; with `attribute`, its attributed cost too
    (a telemetry read; the watchdog does not judge cost and leaves it out)."""
    targets = {s.name: (s.ttft_p95_ms, s.e2e_p95_ms) for s in slo_list()}
    rows = (
        # An exploration probe chose the node of its decisions, not the arm's policy
        # (docs/twin.md): the arms are compared on their policies' own answers.
        DecisionRecord.objects.filter(
            created_at__gte=since, slo_met__isnull=False, probe__isnull=True
        )
        .values_list(
            "arm",
            "slo_met",
            "slo",
            "model",
            "node",
            "ttft_ms",
            "e2e_ms",
            "receipt",
            "created_at",
            "ok",
        )
        .iterator(chunk_size=5000)
    )
    served: list[tuple[str, Served]] = []
    stats: dict[str, ArmStats] = defaultdict(ArmStats)
    groups: dict[tuple[str, str, str, str], tuple[list[float], list[float]]] = defaultdict(
        lambda: ([], [])
    )
    for arm, met, slo, model, node, ttft, e2e, receipt, created_at, ok in rows:
        s = stats[arm]
        s.outcomes += 1
        s.met += int(bool(met))
        picked = _picked(receipt)
        if (cost := _number(picked, "cost_usd")) is not None:
            s.cost_usd += cost
            s.costed += 1
        prefill_ms = _number(picked, "prefill_ms")
        # Only what succeeded is priced: a failure has no decode to share.
        if attribute and ok and ttft is not None and e2e is not None and prefill_ms is not None:
            served.append((arm, Served(node, created_at, ttft, e2e, prefill_ms)))
        ttfts, e2es = groups[(arm, slo, model, node)]
        if ttft is not None:
            ttfts.append(ttft)
        if e2e is not None:
            e2es.append(e2e)
    for (arm, slo, _model, _node), (ttfts, e2es) in groups.items():
        if slo not in targets or max(len(ttfts), len(e2es)) < MIN_GROUP:
            continue
        ttft_target, e2e_target = targets[slo]
        stats[arm].groups += 1
        over_ttft = bool(ttfts) and float(np.percentile(ttfts, 95)) > ttft_target
        over_e2e = bool(e2es) and float(np.percentile(e2es, 95)) > e2e_target
        stats[arm].breached += int(over_ttft or over_e2e)
    for (arm, _), usd in zip(served, attributed_costs([r for _, r in served]), strict=True):
        if usd is not None:
            stats[arm].attributed_usd += usd
            stats[arm].attributed += 1
    return dict(stats)


def significantly_lower(canary: ArmStats, active: ArmStats, confidence: float) -> bool:
    """Whether the canary's attainment is lower than the active arm's beyond sampling noise."""
    return proportion_lower(canary.met, canary.outcomes, active.met, active.outcomes, confidence)


def significantly_more_breached(canary: ArmStats, active: ArmStats, confidence: float) -> bool:
    """Whether the canary's share of breached groups is higher than the active arm's beyond
    sampling noise (groups as the units: with ten groups an arm, one group is ten points)."""
    if not canary.groups or not active.groups:
        return True  # nothing to weigh against: the margin alone decides, as before
    return proportion_lower(
        active.breached, active.groups, canary.breached, canary.groups, confidence
    )


def proportion_lower(k1: int, n1: int, k2: int, n2: int, confidence: float) -> bool:
    """Whether k1/n1 is lower than k2/n2 beyond sampling noise: a one-sided two-proportion
    z-test with the pooled proportion, at `confidence`."""
    if k1 * n2 >= k2 * n1:
        return False
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return True
    return (k2 / n2 - k1 / n1) / se > NormalDist().inv_cdf(confidence)


def _picked(receipt: object) -> dict[str, object] | None:
    """The picked node's row of a decision's receipt (docs/dashboard.md: candidates in rank
    order, the pick first), or None for records without one."""
    if not isinstance(receipt, dict):
        return None
    candidates = receipt.get("candidates")
    if not candidates or not isinstance(candidates, list) or not isinstance(candidates[0], dict):
        return None
    return candidates[0]


def _number(row: dict[str, object] | None, key: str) -> float | None:
    """A finite number of a receipt row (a receipt estimate), else None."""
    value = row.get(key) if row is not None else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


# Where the watchdog leaves its last check for the rollout panel
# (console/policies/canary_report.py): the shared cache, so the web process sees the worker's
# checks when REDIS_URL is set.
WATCHDOG_CACHE_KEY = "locus:canary-watchdog:last"


def watchdog_judgement(mine: ArmStats, theirs: ArmStats) -> tuple[str, str]:
    """What the watchdog makes of the canary's and the active arm's figures: ("waiting",
    why), ("healthy", figures) or ("rollback", the reasons). Pure: the watchdog acts on it,
    the rollout panel shows it."""
    needed = settings.LOCUS_CANARY_MIN_OUTCOMES
    if mine.outcomes < needed or theirs.outcomes < needed:
        return "waiting", f"waiting: {mine.outcomes} canary and {theirs.outcomes} active outcomes"
    drop = theirs.attainment - mine.attainment
    extra_breaches = mine.breach_share - theirs.breach_share
    reasons = []
    if drop > settings.LOCUS_CANARY_MAX_ATTAINMENT_DROP and significantly_lower(
        mine, theirs, settings.LOCUS_CANARY_CONFIDENCE
    ):
        reasons.append(f"SLO attainment {mine.attainment:.1%} vs active {theirs.attainment:.1%}")
    if extra_breaches > settings.LOCUS_CANARY_MAX_BREACH_SHARE_INCREASE and (
        significantly_more_breached(mine, theirs, settings.LOCUS_CANARY_CONFIDENCE)
    ):
        reasons.append(
            f"breached groups {mine.breached}/{mine.groups} vs active "
            f"{theirs.breached}/{theirs.groups}"
        )
    if not reasons:
        return "healthy", (
            f"healthy: attainment {mine.attainment:.1%} vs {theirs.attainment:.1%}, "
            f"breach share {mine.breach_share:.1%} vs {theirs.breach_share:.1%}"
        )
    return "rollback", "automatic rollback: " + "; ".join(reasons)


def watchdog_since(canary: PolicyVersion) -> Any:
    """The start of the outcomes the watchdog judges: the canary's start, at most
    `LOCUS_CANARY_WINDOW_SECONDS` ago."""
    window_start = timezone.now() - timedelta(seconds=settings.LOCUS_CANARY_WINDOW_SECONDS)
    return max(canary.state_changed_at or window_start, window_start)


def canary_check() -> str:
    """Check the canary, roll it back if it is worse; return what was decided."""
    canary = PolicyVersion.objects.filter(state=PolicyState.CANARY).first()
    if canary is None:
        return "no canary"
    stats = arm_stats(watchdog_since(canary))
    state, said = watchdog_judgement(
        stats.get("canary", ArmStats()), stats.get("active", ArmStats())
    )
    cache.set(
        WATCHDOG_CACHE_KEY,
        {"at": timezone.now().isoformat(), "version_id": canary.pk, "state": state, "said": said},
        timeout=None,
    )
    if state == "rollback":
        policy_transition(policy=canary, action="rollback", actor=None, reason=said)
    return said
