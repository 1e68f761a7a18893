"""Training runs from the console: defaults, the learning curve, and the baseline bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.policies.models import PolicyVersion, TrainingRun
from tests.console.policies.test_rollout import Admins

pytestmark = pytest.mark.django_db


@pytest.fixture
def admins(fleet: Any, django_capture_on_commit_callbacks: Any, settings: Any, tmp_path: Path):  # type: ignore[no-untyped-def]
    settings.LOCUS_ARTIFACTS_DIR = tmp_path / "artifacts"
    settings.LOCUS_TRAINING_WINDOW = 256  # short episodes and validation replays
    return Admins(django_capture_on_commit_callbacks)


def _start(admins: Admins, body: dict[str, Any], execute: bool) -> TrainingRun:
    with admins.capture(execute=execute):
        response = admins.alice.post("/api/v1/training-runs", body, format="json")
    assert response.status_code == 202, response.content
    return TrainingRun.objects.get(pk=response.json()["id"])


def test_the_form_defaults_to_the_fleet_trace_and_the_generalist(
    admins: Admins, settings: Any
) -> None:
    # Only the budget must be stated (docs/operations.md); everything else has its default.
    run = _start(admins, {"confirm": True}, execute=False)
    assert run.config["trace"] == settings.LOCUS_FLEET_TRACE
    assert run.config["init"] == "generalist"
    assert run.config["register_below_baseline"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"init": "ppo-fleet-demo"}, "init"),
        ({"trace": "../../etc/passwd"}, "trace"),
        ({"register_below_baseline": "maybe"}, "register_below_baseline"),
        ({"seed": 2**40}, "seed"),
    ],
)
def test_bad_training_requests_are_refused_with_field_errors(
    admins: Admins, body: dict[str, Any], field: str
) -> None:
    response = admins.alice.post("/api/v1/training-runs", {"timesteps": 256, **body}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert not TrainingRun.objects.exists()


def test_a_default_run_fine_tunes_the_generalist_to_the_end(admins: Admins) -> None:
    run = _start(admins, {"timesteps": 256}, execute=True)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.config["init"] == "generalist"
    validations = [m for m in run.metrics if m.get("event") == "validation"]
    assert validations[0]["phase"] == "imitate" and validations[0]["timesteps"] == 0
    # A fine-tune: every validation also replays the long-prompt variant, and the guard's
    # decision is on the learning curve's records, the API and the page's log.
    assert all("validation_score_long_prompt" in v for v in validations)
    (guard,) = [m for m in run.metrics if m.get("event") == "fine_tune_guard"]
    assert guard["decision"] == "kept the start" or guard["decision"].startswith("took ppo@")
    assert f"fine-tune guard (prompts x8): {guard['decision']}" in run.log_tail
    detail = admins.alice.get(f"/api/v1/training-runs/{run.pk}").json()
    assert guard in detail["metrics"]
    # Registered as a candidate exactly when it clears the best heuristic.
    assert (run.version is None) == run.below_baseline


def test_a_run_below_the_best_heuristic_says_so_and_registers_nothing(admins: Admins) -> None:
    # No imitation and 256 PPO steps: the start is an untrained network, far below the
    # heuristics on validation.
    run = _start(admins, {"init": "imitation", "timesteps": 256}, execute=True)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.below_baseline is True and run.version is None
    assert not PolicyVersion.objects.filter(name="ppo").exists()
    assert "not registered as a candidate" in run.log_tail
    best = run.report["baselines"]["best_heuristic"]
    assert run.report["validation"]["slo_attainment"] < best["slo_attainment"]
    # The learning curve: baselines first, then validations with both reference lines.
    phases = [m["phase"] for m in run.metrics]
    assert phases[0] == "baselines"
    validations = [m for m in run.metrics if m.get("event") == "validation"]
    assert [v["timesteps"] for v in validations][0] == 0 and len(validations) >= 2
    for v in validations:
        assert v["best_heuristic_attainment"] == best["slo_attainment"]
        assert {"slo_attainment", "ttft_p95_ms", "cost_per_1k_requests", "teacher_attainment"} <= (
            set(v)
        )
    detail = admins.alice.get(f"/api/v1/training-runs/{run.pk}").json()
    assert detail["below_baseline"] is True and detail["metrics"] == run.metrics


def test_an_explicit_override_registers_a_run_below_the_baseline(admins: Admins) -> None:
    body = {"init": "imitation", "timesteps": 256, "register_below_baseline": True}
    run = _start(admins, body, execute=True)
    run.refresh_from_db()
    assert run.below_baseline is True
    assert run.version is not None and run.version.state == "candidate"
    assert "registered anyway" in run.log_tail
