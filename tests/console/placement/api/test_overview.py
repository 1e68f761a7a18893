"""GET /api/v1/overview: the decision rate, and per SLO its attainment judged as its breaches
are (objective, burn rates under each rule, open breach), from outcomes reported through the
API and breaches opened by the evaluator (telemetry/breaches.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from telemetry.breaches import breaches_evaluate
from telemetry.models import SlaBreach

pytestmark = pytest.mark.django_db

INTERACTIVE = {
    "model": "llama-3.1-8b",
    "source": "munich-app",
    "prompt_tokens": 1800,
    "max_output_tokens": 256,
}
BATCH = {"model": "llama-3.1-8b", "source": "us-batch", "prompt_tokens": 4000,
         "max_output_tokens": 512}  # fmt: skip
FAST = {"ttft_ms": 300, "e2e_ms": 9000, "ok": True}
SLOW = {"ttft_ms": 5000, "e2e_ms": 9000, "ok": True}  # interactive's TTFT target is 800 ms


@pytest.fixture(autouse=True)
def slo_rules_of_this_test(settings: Any) -> None:
    """Rules at a 3-day period (a tenth of the workbook's): page 14.4x over 360 s and 30 s
    held 12 s, ticket 6x over 2160 s and 180 s held 90 s; 6-s buckets, so a test's outcomes
    of the last few seconds are all in every window. (Each test's SLO windows start empty:
    tests/conftest.py, `_isolate_telemetry`.)"""
    settings.LOCUS_SLO_PERIOD_DAYS = 3.0
    settings.LOCUS_SLO_MIN_REQUESTS = 20
    # The first outcome evaluates (too few requests to judge); the test evaluates after.
    settings.LOCUS_SLO_EVAL_INTERVAL_SECONDS = 3600.0


def _report(service: Any, request: dict[str, Any], outcomes: list[dict[str, Any]]) -> None:
    answer = service.post(
        "/api/v1/placements:batch", {"requests": [request] * len(outcomes)}, format="json"
    ).json()
    for decision, outcome in zip(answer["decisions"], outcomes, strict=True):
        reported = service.post(
            f"/api/v1/placements/{decision['decision_id']}/outcome", outcome, format="json"
        )
        assert reported.status_code == 200, reported.content


def test_it_gives_rate_attainment_and_the_slos_standing(
    example_engine: Any, client_for: Any
) -> None:
    _report(client_for("service"), INTERACTIVE, [FAST, FAST, SLOW])
    example_engine.recorder.flush()
    body = client_for("viewer").get("/api/v1/overview?window=600").json()
    assert body["decisions_in_window"] == 3
    assert body["decisions_per_s"] == pytest.approx(3 / 60)
    (interactive,) = body["slo_attainment"]
    assert interactive["slo"] == "interactive"
    assert (interactive["outcomes"], interactive["met"]) == (3, 2)
    assert interactive["attainment"] == pytest.approx(2 / 3)
    assert interactive["objective"] == 0.95
    # 1 bad in 3 spends the 5% budget at 6.7x, past the ticket's 6x, but 3 requests are
    # fewer than the rules need (LOCUS_SLO_MIN_REQUESTS): no rule holds.
    assert [
        (r["severity"], r["factor"], r["long_window_s"], r["short_window_s"], r["requests"])
        for r in interactive["burn_rates"]
    ] == [("page", 14.4, 360.0, 30.0, 3), ("ticket", 6.0, 2160.0, 180.0, 3)]
    for rule in interactive["burn_rates"]:
        assert rule["long_burn_rate"] == pytest.approx((1 / 3) / 0.05)
        assert rule["short_burn_rate"] == pytest.approx((1 / 3) / 0.05)
        assert rule["holds"] is False
    assert (interactive["open_breach"], interactive["open_breach_metric"]) == (None, None)
    bad = client_for("viewer").get("/api/v1/overview?window=abc")
    assert bad.status_code == 400 and "window" in bad.json()["errors"]


def test_it_names_an_slos_worst_open_breach_and_none_for_one_only_below_objective(
    example_engine: Any, client_for: Any
) -> None:
    service = client_for("service")
    _report(service, INTERACTIVE, [SLOW] * 22 + [FAST] * 2)
    # batch: 3 of 20 miss their 10 s TTFT target: 85%, a 3x burn, under both rules.
    _report(service, BATCH, [{**FAST, "ttft_ms": 12_000, "e2e_ms": 20_000}] * 3 + [FAST] * 17)
    example_engine.recorder.flush()
    # The evaluator, as the beat task runs it: both rules start holding for interactive and
    # the page rule's 12-s hold passes; 90 s on its 30-s window has no requests, so the page
    # resolves, while the ticket's 180-s window still burns and its 90-s hold has passed.
    start = timezone.now()
    viewer = client_for("viewer")
    worst = []
    for after in ((0, 12), (90,)):
        for seconds in after:
            breaches_evaluate(now=start + timedelta(seconds=seconds))
        opened = SlaBreach.objects.filter(status="open").values_list("slo", "severity")
        row = {r["slo"]: r for r in viewer.get("/api/v1/overview").json()["slo_attainment"]}
        worst.append((sorted(opened), row["interactive"]["open_breach"]))
    assert worst == [
        ([("interactive", "page")], "page"),
        ([("interactive", "ticket")], "ticket"),
    ]

    body = viewer.get("/api/v1/overview").json()
    by_slo = {row["slo"]: row for row in body["slo_attainment"]}
    interactive, batch = by_slo["interactive"], by_slo["batch"]
    assert interactive["attainment"] == pytest.approx(2 / 24)
    assert interactive["open_breach_metric"] == "within_targets"
    for rule in interactive["burn_rates"]:
        assert rule["long_burn_rate"] == pytest.approx((22 / 24) / 0.05)  # 18.3x
        assert rule["holds"] is True
    assert batch["attainment"] == pytest.approx(17 / 20)
    assert batch["objective"] == 0.95
    assert batch["open_breach"] is None
    assert [(r["severity"], r["requests"], r["holds"]) for r in batch["burn_rates"]] == [
        ("page", 20, False),
        ("ticket", 20, False),
    ]
    for rule in batch["burn_rates"]:
        assert rule["long_burn_rate"] == pytest.approx((3 / 20) / 0.05)  # 3x
        assert rule["short_burn_rate"] == pytest.approx((3 / 20) / 0.05)
