"""`POST /api/v1/training-runs` never starts a run whose budget nobody chose (issue 13): `{}`
is refused, a budget or an explicit `confirm: true` for the server default is required."""

from __future__ import annotations

from typing import Any

import pytest

from console.policies.models import TrainingRun

pytestmark = pytest.mark.django_db


def _start(client_for: Any, capture: Any, body: dict[str, Any]) -> Any:
    with capture(execute=False):  # queued, not run: only the request is under test
        return client_for("admin").post("/api/v1/training-runs", body, format="json")


def test_an_empty_body_starts_nothing(
    fleet: Any, client_for: Any, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.LOCUS_TRAINING_TIMESTEPS = 500_000
    response = _start(client_for, django_capture_on_commit_callbacks, {})
    assert response.status_code == 400, response.content
    assert "500,000" in response.json()["errors"]["timesteps"][0]
    assert not TrainingRun.objects.exists()


@pytest.mark.parametrize("confirm", ["yes", 1, None, False])
def test_only_a_json_true_confirms_the_default_budget(
    fleet: Any, client_for: Any, django_capture_on_commit_callbacks: Any, confirm: Any
) -> None:
    body = {"confirm": confirm}
    response = _start(client_for, django_capture_on_commit_callbacks, body)
    assert response.status_code == 400, response.content
    assert not TrainingRun.objects.exists()


def test_a_confirmed_default_or_an_explicit_budget_starts_a_run(
    fleet: Any, client_for: Any, django_capture_on_commit_callbacks: Any
) -> None:
    confirmed = _start(client_for, django_capture_on_commit_callbacks, {"confirm": True})
    assert confirmed.status_code == 202, confirmed.content
    run = TrainingRun.objects.get(pk=confirmed.json()["id"])
    assert "timesteps" not in run.config and "confirm" not in run.config  # the default runs
    explicit = _start(client_for, django_capture_on_commit_callbacks, {"timesteps": 256})
    assert explicit.status_code == 202, explicit.content
    assert TrainingRun.objects.get(pk=explicit.json()["id"]).config["timesteps"] == 256
