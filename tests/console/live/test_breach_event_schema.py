"""The `breach` event's schema: what the SLOs page and the fleet grid read from it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from console.live.schemas import validate_event

OPENED: dict[str, Any] = {
    "id": 7,
    "status": "open",
    "slo": "interactive-eu",
    "model": "",
    "node": "",
    "metric": "within_targets",
    "severity": "page",
    "objective": 0.95,
    "observed": 15.2,
    "threshold": 14.4,
    "nodes": ["fra-h100-1", "muc-l4-1"],
    "opened_at": "2026-11-26T08:11:35+00:00",
    "ts": "2026-11-26T08:11:35+00:00",
}


def test_a_burn_rate_breach_event_validates() -> None:
    assert validate_event("breach", OPENED) == {"type": "breach", **OPENED}


@pytest.mark.parametrize(
    "change",
    [
        {"severity": "urgent"},  # only page or ticket
        {"metric": "ttft_p95_ms"},  # no longer opened
        {"nodes": "fra-h100-1"},  # a list of node names
        {"status": "flapping"},
    ],
)
def test_a_malformed_breach_event_is_refused(change: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        validate_event("breach", {**OPENED, **change})


def test_a_breach_event_without_its_level_is_refused() -> None:
    with pytest.raises(ValidationError):
        validate_event("breach", {k: v for k, v in OPENED.items() if k != "severity"})
