"""Where each SLO stands (telemetry/slo_status.py): judged through the breach evaluator's own
reading of the windows, with the worst open breach named.

At LOCUS_SLO_PERIOD_DAYS = 0.5 (a sixtieth of the workbook's): page 14.4x over 60 s and 5 s
held 2 s, ticket 6x over 360 s and 30 s held 15 s; 1-second buckets.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from telemetry.breaches import breaches_evaluate
from telemetry.models import SlaBreach
from telemetry.services import outcome_record
from telemetry.slo_status import slo_burn_rates, slo_standing

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
MODEL = "llama-3.1-8b"


@pytest.fixture
def half_day_rules(fleet: Any, settings: Any) -> None:
    settings.LOCUS_SLO_PERIOD_DAYS = 0.5
    settings.LOCUS_SLO_MIN_REQUESTS = 20
    # Each second ends with an evaluation, as the beat task's; an outcome triggers none after
    # the first.
    settings.LOCUS_SLO_EVAL_INTERVAL_SECONDS = 3600.0


def _second(t: int, *, interactive_slow: bool) -> None:
    """One second of outcomes: 8 interactive (all slow, or all fast), 4 batch (1 slow)."""
    at = T0 + timedelta(seconds=t)
    for k in range(8):
        ttft = 3000.0 if interactive_slow else 300.0
        outcome_record(slo="interactive", model=MODEL, node="muc-l4-1", ttft_ms=ttft,
                       e2e_ms=9000.0, ok=True, at=at + timedelta(seconds=k / 10))  # fmt: skip
    for k in range(4):
        outcome_record(slo="batch", model=MODEL, node="fra-h100-1",
                       ttft_ms=12_000.0 if k == 0 else 900.0, e2e_ms=20_000.0, ok=True,
                       at=at + timedelta(seconds=k / 10))  # fmt: skip
    breaches_evaluate(now=at + timedelta(seconds=0.9))


def test_both_levels_open_name_the_page_and_the_burn_rates_are_the_evaluators(
    half_day_rules: None,
) -> None:
    for t in range(30):
        _second(t, interactive_slow=True)
    now = T0 + timedelta(seconds=29.9)
    assert sorted(SlaBreach.objects.filter(status="open").values_list("slo", "severity")) == [
        ("interactive", "page"),
        ("interactive", "ticket"),
    ]

    standing = slo_standing(slos=["interactive", "batch", "deleted"], now=now)
    assert set(standing) == {"interactive", "batch"}
    interactive, batch = standing["interactive"], standing["batch"]
    assert (interactive["open_breach"], interactive["open_breach_metric"]) == (
        "page",
        "within_targets",
    )
    assert interactive["objective"] == 0.95
    assert [(r["severity"], r["factor"], r["long_window_s"], r["short_window_s"], r["holds"])
            for r in interactive["burn_rates"]] == [
        ("page", 14.4, 60.0, 5.0, True),
        ("ticket", 6.0, 360.0, 30.0, True),
    ]  # fmt: skip
    assert interactive["burn_rates"][0]["long_burn_rate"] == pytest.approx(1 / 0.05)
    # batch: 1 of 4 misses its target, a 5x burn: under both rules, no breach.
    assert batch["open_breach"] is None
    for rule in batch["burn_rates"]:
        assert rule["long_burn_rate"] == pytest.approx(0.25 / 0.05)
        assert rule["holds"] is False

    # The same figures as the burn-rates endpoint's, for the SLI the tiles show.
    table = slo_burn_rates(now=now)
    for slo, row in standing.items():
        (sli,) = [s for s in table["slos"] if s["slo"] == slo and s["sli"] == "within_targets"]
        assert [
            (r["long_burn_rate"], r["short_burn_rate"], r["holds"]) for r in row["burn_rates"]
        ] == [(r["long_burn_rate"], r["short_burn_rate"], r["holds"]) for r in sli["rules"]]


def test_a_resolved_breach_leaves_no_open_level(half_day_rules: None) -> None:
    for t in range(30):
        _second(t, interactive_slow=True)
    for t in range(30, 420):
        _second(t, interactive_slow=False)
    now = T0 + timedelta(seconds=419.9)
    assert not SlaBreach.objects.filter(status="open").exists()
    interactive = slo_standing(slos=["interactive"], now=now)["interactive"]
    assert interactive["open_breach"] is None
    assert [r["holds"] for r in interactive["burn_rates"]] == [False, False]
    assert interactive["burn_rates"][0]["long_burn_rate"] == 0.0
