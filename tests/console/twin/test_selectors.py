"""`observation_records`: a split decision's export carries the node that ran its prefill
(issue #30), so calibration can replay it on its pair and fit the link between them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from console.placement.models import DecisionRecord
from console.twin.selectors import observation_records

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _record(i: int, **extra: Any) -> DecisionRecord:
    values: dict[str, Any] = {
        "id": f"{i:032x}",
        "created_at": T0 + timedelta(seconds=i),
        "source": "munich-app",
        "source_site": "muc-edge",
        "model": "llama-3.1-8b",
        "slo": "interactive-eu",
        "prompt_tokens": 20000,
        "max_output_tokens": 100,
        "node": "muc-d1",
        "node_site": "muc-edge",
        "policy_name": "weighted-score",
        "policy_version": "builtin",
        "latency_us": 100.0,
        "ttft_ms": 3000.0,
        "e2e_ms": 6000.0,
        "ok": True,
        **extra,
    }
    return DecisionRecord.objects.create(**values)


def test_a_split_decision_exports_its_prefill_node_and_an_unsplit_one_none() -> None:
    _record(0, prefill_node="fra-p1")
    _record(1, node="muc-m1")
    lines = list(observation_records(since=T0, until=T0 + timedelta(minutes=1)))
    assert [line["node"] for line in lines] == ["muc-d1", "muc-m1"]
    assert lines[0]["prefill_node"] == "fra-p1"
    # An unsplit decision's line is exactly what it was before split decisions existed.
    assert "prefill_node" not in lines[1]
