"""/healthz and /readyz."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client


def test_healthz_answers_without_touching_anything() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_checks_database_broker_and_snapshot(
    fleet: Any, settings: Any, tmp_path: Any
) -> None:
    response = Client().get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert set(body["checks"]) == {"database", "broker", "keyring", "snapshot", "recorder"}
    assert body["checks"]["snapshot"]["status"].startswith("ok (2 nodes")


@pytest.mark.django_db
def test_readyz_is_503_naming_a_dead_broker(fleet: Any, settings: Any) -> None:
    from console.celery import app

    previous = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    try:
        response = Client().get("/readyz")
    finally:
        app.conf.broker_url = previous
    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["status"] == "failed"


@pytest.mark.django_db
def test_readyz_hides_the_raw_error_from_anyone_not_signed_in(
    fleet: Any, client_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from console.celery import app

    assert Client().get("/readyz").status_code == 200  # the outage starts below
    previous = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    try:
        anonymous = Client().get("/readyz")
        viewer = client_for("viewer").get("/readyz")
    finally:
        app.conf.broker_url = previous
    assert anonymous.status_code == 503
    assert (
        anonymous.json()["checks"]["broker"]["error"] == "unavailable (details in the server log)"
    )
    assert "127.0.0.1" not in anonymous.content.decode()
    # A signed-in operator sees what failed, and the log has it once per outage.
    assert "127.0.0.1:1" in viewer.json()["checks"]["broker"]["error"]
    failures = [r for r in caplog.records if "readiness check broker failed" in r.getMessage()]
    assert len(failures) == 1 and "127.0.0.1:1" in failures[0].getMessage()
    assert Client().get("/readyz").status_code == 200
    assert any("broker passes again" in r.getMessage() for r in caplog.records)
