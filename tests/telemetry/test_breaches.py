"""SLA breaches from decision outcomes and from exporter TTFT histograms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from telemetry.models import SlaBreach
from telemetry.services import outcome_record

pytestmark = pytest.mark.django_db


def _outcomes(n: int, at: datetime, **kwargs: Any) -> None:
    for i in range(n):
        outcome_record(
            slo="interactive",
            model="llama-3.1-8b",
            node="muc-l4-1",
            at=at + timedelta(milliseconds=i),
            **kwargs,
        )


def test_slow_first_tokens_open_a_breach_that_resolves_when_the_window_recovers(
    fleet: Any, events: list[dict[str, Any]], client_for: Any, settings: Any
) -> None:
    settings.LOCUS_SLO_WINDOW_SECONDS = 60
    t0 = datetime.now(UTC)
    _outcomes(10, t0, ttft_ms=2000.0, e2e_ms=3000.0, ok=True)
    assert not SlaBreach.objects.exists()  # fewer than LOCUS_SLO_MIN_SAMPLES
    _outcomes(15, t0, ttft_ms=2000.0, e2e_ms=3000.0, ok=True)
    breach = SlaBreach.objects.get()
    assert (breach.metric, breach.status, breach.threshold) == ("ttft_p95_ms", "open", 800.0)
    assert breach.observed == pytest.approx(2000, rel=0.1)
    assert events[-1]["type"] == "breach" and events[-1]["status"] == "open"
    listed = client_for("viewer").get("/api/v1/breaches", {"status": "open", "node": "muc-l4-1"})
    assert listed.json()["count"] == 1 and listed.json()["results"][0]["slo"] == "interactive"
    assert client_for("viewer").get("/api/v1/breaches", {"slo": "batch"}).json()["count"] == 0
    # The slow outcomes leave the window; fast ones bring p95 back under 800 ms.
    _outcomes(25, t0 + timedelta(seconds=90), ttft_ms=100.0, e2e_ms=900.0, ok=True)
    breach.refresh_from_db()
    assert breach.status == "resolved" and breach.resolved_at is not None
    assert [e["status"] for e in events if e["type"] == "breach"] == ["open", "resolved"]


def test_errors_above_the_rate_open_an_error_rate_breach(fleet: Any) -> None:
    t0 = datetime.now(UTC)
    _outcomes(20, t0, ttft_ms=100.0, e2e_ms=500.0, ok=True)
    _outcomes(5, t0, ttft_ms=None, e2e_ms=None, ok=False)
    breach = SlaBreach.objects.get()
    # Opened as soon as the rate crossed 5% with enough samples: 2 errors in 22.
    assert breach.metric == "error_rate" and breach.observed == pytest.approx(2 / 22)
    assert breach.threshold == 0.05  # LOCUS_SLO_DEFAULT_MAX_ERROR_RATE


def _vllm_text(bucket_counts: dict[str, int], stamp_ms: int) -> str:
    bounds = ["0.1", "0.5", "1.0", "2.5", "5.0", "+Inf"]
    lines, total = ["# TYPE vllm:time_to_first_token_seconds histogram"], 0
    for bound in bounds:
        total += bucket_counts.get(bound, 0)
        lines.append(
            f'vllm:time_to_first_token_seconds_bucket{{le="{bound}",model_name="llama-3.1-8b"}}'
            f" {total} {stamp_ms}"
        )
    lines.append(
        f'vllm:time_to_first_token_seconds_count{{model_name="llama-3.1-8b"}} {total} {stamp_ms}'
    )
    return "\n".join(lines) + "\n"


def test_exporter_ttft_histograms_feed_the_windows(fleet: Any, push: Any) -> None:
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    push("prometheus?node=muc-l4-1", _vllm_text({"0.1": 100}, now_ms - 15000), "text/plain")
    assert not SlaBreach.objects.exists()  # the first scrape's history is not a window
    push(
        "prometheus?node=muc-l4-1", _vllm_text({"0.1": 100, "2.5": 30}, now_ms - 5000), "text/plain"
    )
    breach = SlaBreach.objects.get(slo="interactive")
    assert breach.node == "muc-l4-1" and breach.model == "llama-3.1-8b"
    assert breach.metric == "ttft_p95_ms" and breach.observed > 800
    # 10 s at batch's 10 s target: the (1.0, 2.5] midpoint, 1.75 s, is within it.
    assert not SlaBreach.objects.filter(slo="batch").exists()
