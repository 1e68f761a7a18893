"""Reads of decision records for dashboards."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from console.placement.models import DecisionRecord


def decision_overview(*, window_s: float = 900.0, rate_window_s: float = 60.0) -> dict[str, Any]:
    """Decisions per second (last `rate_window_s`) and, per SLO, the attainment of the
    outcomes reported within `window_s` (served and met every target / outcomes)."""
    now = timezone.now()
    recent = DecisionRecord.objects.filter(created_at__gte=now - timedelta(seconds=window_s))
    rate_count = recent.filter(created_at__gte=now - timedelta(seconds=rate_window_s)).count()
    per_slo = (
        recent.filter(slo_met__isnull=False)
        .exclude(slo="")
        .values("slo")
        .annotate(outcomes=Count("id"), met=Count("id", filter=Q(slo_met=True)))
        .order_by("slo")
    )
    per_policy = (
        recent.values("policy_name", "policy_version", "arm")
        .annotate(decisions=Count("id"))
        .order_by("-decisions")
    )
    return {
        "window_s": window_s,
        "decisions_per_s": rate_count / rate_window_s,
        "decisions_in_window": recent.count(),
        "slo_attainment": [
            {
                "slo": row["slo"],
                "outcomes": row["outcomes"],
                "met": row["met"],
                "attainment": row["met"] / row["outcomes"],
            }
            for row in per_slo
        ],
        "by_policy": [
            {
                "policy": f"{r['policy_name']}@{r['policy_version']}",
                "arm": r["arm"],
                "decisions": r["decisions"],
            }
            for r in per_policy
        ],
    }
