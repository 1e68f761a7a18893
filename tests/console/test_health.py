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
