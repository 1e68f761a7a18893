"""Telemetry fixtures: SLOs evaluated on every outcome, and pushing through the API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

SERVICE_AUTH: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _evaluate_every_outcome(settings: Any) -> None:
    """Every outcome evaluates its SLO (the state store is emptied per test by the root
    conftest, `_isolate_telemetry`)."""
    settings.LOCUS_SLO_EVAL_INTERVAL_SECONDS = 0.0


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Live events sent by telemetry services, as they would go on the wire."""
    from console.live.schemas import validate_event

    sent: list[dict[str, Any]] = []

    def record(event_type: str, data: dict[str, Any]) -> None:
        sent.append(validate_event(event_type, data))

    monkeypatch.setattr("telemetry.freshness.send_event", record)
    monkeypatch.setattr("telemetry.breaches.send_event", record)
    return sent


@pytest.fixture
def service(client_for: Callable[[str | None], Any]) -> Any:
    return client_for("service")


@pytest.fixture
def push(service: Any, django_capture_on_commit_callbacks: Any) -> Callable[..., Any]:
    """POST to an ingest endpoint and run what it enqueued (the eager Celery task)."""

    def post(path: str, body: Any, content_type: str = "application/json") -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            if isinstance(body, dict):
                return service.post(f"/api/v1/telemetry/{path}", body, format="json")
            return service.post(f"/api/v1/telemetry/{path}", data=body, content_type=content_type)

    return post
