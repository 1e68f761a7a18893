"""/metrics counts reported outcomes by `ok` (what docs/grafana and docs/prometheus query)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.console.placement.test_decisions import INTERACTIVE

pytestmark = pytest.mark.django_db


def _outcomes(client: Any, ok: str) -> float:
    text = client.get("/metrics").content.decode()
    match = re.search(rf'^locus_outcomes_total{{ok="{ok}"}} (\S+)$', text, re.MULTILINE)
    assert match, text
    return float(match.group(1))


def test_reported_outcomes_are_counted_by_ok(example_engine: Any, client_for: Any) -> None:
    service, anonymous = client_for("service"), client_for(None)
    before = {ok: _outcomes(anonymous, ok) for ok in ("true", "false")}
    for ok in (True, True, False):
        decision = service.post("/api/v1/placements", INTERACTIVE, format="json").json()
        service.post(
            f"/api/v1/placements/{decision['decision_id']}/outcome",
            {"ttft_ms": 100, "e2e_ms": 900, "ok": ok},
            format="json",
        )
    assert _outcomes(anonymous, "true") == before["true"] + 2
    assert _outcomes(anonymous, "false") == before["false"] + 1
