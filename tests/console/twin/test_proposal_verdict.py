"""A proposal that does not improve the held-out errors is not applied without an explicit
override (issue #26): refused through the API, applied with `override: true` and a reason,
and the override kept in the audit entry with who gave it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from console.inventory.models import Profile
from console.twin.models import CalibrationRun, ProposalDecision
from optimizer.calibration.holdout import verdict

NOW = datetime.now(UTC)


def _errors(ttft: tuple[float, float], e2e: tuple[float, float]) -> dict[str, Any]:
    return {
        "ttft": {"median_abs_rel_error": ttft[0], "p95_abs_rel_error": ttft[1]},
        "e2e": {"median_abs_rel_error": e2e[0], "p95_abs_rel_error": e2e[1]},
    }


# What the twin reported on overloaded, concentrated traffic in issue #26: the median TTFT
# error rose from 0.6% to 7.8% while the rest improved.
BEFORE = _errors((0.006, 0.44), (0.2, 0.4))
HARMFUL = _errors((0.078, 0.30), (0.01, 0.05))
HELPFUL = _errors((0.002, 0.03), (0.01, 0.05))


def _run(after: dict[str, Any] | None) -> CalibrationRun:
    """A succeeded run proposing llama-3.1-8b on H100 at 15,000 tokens/s (nominal 18,000),
    with the verdict the optimizer gives for `after` (None: a report from before verdicts)."""
    value = {"nominal": 18000.0, "fitted": 15000.0, "interval": [14800.0, 15200.0], "samples": 500}
    same = {"nominal": 9.0, "fitted": 9.0, "interval": [8.9, 9.1], "samples": 500}
    report: dict[str, Any] = {
        "profiles": [
            {
                "model": "llama-3.1-8b",
                "accelerator": "h100",
                "status": "fitted",
                "samples": 500,
                "values": {
                    "prefill_tokens_per_s": value,
                    "decode_step_ms": same,
                    "decode_step_ms_per_seq": {**same, "nominal": 0.12, "fitted": 0.12},
                },
            }
        ],
    }
    if after is not None:
        report["fidelity"] = {"before": BEFORE, "after": after}
        report["verdict"] = verdict(BEFORE, after, 250)
    return CalibrationRun.objects.create(
        since=NOW - timedelta(hours=1),
        until=NOW,
        min_samples=50,
        status="succeeded",
        proposal="pending",
        requested_by_name="system",
        report=report,
    )


def _prefill() -> float:
    profile = Profile.objects.get(model__name="llama-3.1-8b", accelerator__name="h100")
    return float(profile.prefill_tokens_per_s)


def _apply(client: Any, run: CalibrationRun, **body: Any) -> Any:
    return client.post(
        f"/api/v1/calibration-runs/{run.pk}/apply", {"reason": "go", **body}, format="json"
    )


def test_the_run_says_its_verdict(demo_engine: Any, client_for: Any) -> None:
    harmful, helpful = _run(HARMFUL), _run(HELPFUL)
    viewer = client_for("viewer")
    answer = viewer.get(f"/api/v1/calibration-runs/{harmful.pk}").json()["verdict"]
    assert answer["verdict"] == "no_improvement" and answer["worse"] == ["ttft median"]
    assert "ttft median" in answer["reason"]
    assert viewer.get(f"/api/v1/calibration-runs/{helpful.pk}").json()["verdict"]["verdict"] == (
        "improved"
    )


def test_a_harmful_proposal_is_refused_and_changes_nothing(
    demo_engine: Any, client_for: Any
) -> None:
    run = _run(HARMFUL)
    answer = _apply(client_for("operator"), run)
    assert answer.status_code == 409
    body = answer.json()
    assert "does not improve the held-out errors" in body["message"]
    assert "override" in body["errors"]
    assert _prefill() == 18000
    assert not ProposalDecision.objects.exists()
    assert CalibrationRun.objects.get(pk=run.pk).proposal == "pending"


@pytest.mark.parametrize("override", ["true", 1, None, "yes"])
def test_an_override_must_be_a_json_boolean(
    demo_engine: Any, client_for: Any, override: Any
) -> None:
    answer = _apply(client_for("operator"), _run(HARMFUL), override=override)
    assert answer.status_code == 400 and "override" in answer.json()["errors"]
    assert _prefill() == 18000


def test_an_explicit_override_applies_it_and_is_audited(demo_engine: Any, client_for: Any) -> None:
    run = _run(HARMFUL)
    assert _apply(client_for("viewer"), run, override=True).status_code == 403
    answer = client_for("operator").post(
        f"/api/v1/calibration-runs/{run.pk}/apply",
        {"reason": "known maintenance skewed the hold-out", "override": True},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["override"] is True
    assert _prefill() == 15000
    audit = ProposalDecision.objects.get(run=run)
    assert audit.override and audit.action == "applied"
    assert audit.actor.startswith("operator-")
    assert audit.reason == "known maintenance skewed the hold-out"
    listed = client_for("viewer").get(f"/api/v1/calibration-runs/{run.pk}").json()
    assert listed["decisions"][0]["override"] is True


def test_an_improving_proposal_applies_without_override(demo_engine: Any, client_for: Any) -> None:
    run = _run(HELPFUL)
    answer = _apply(client_for("operator"), run)
    assert answer.status_code == 200 and answer.json()["override"] is False
    assert _prefill() == 15000
    # An override on an improving proposal overrides nothing, and is recorded as such.
    assert not ProposalDecision.objects.get(run=run).override


def test_a_run_from_before_the_verdict_needs_an_override(demo_engine: Any, client_for: Any) -> None:
    run = _run(None)
    operator = client_for("operator")
    refused = _apply(operator, run)
    assert refused.status_code == 409 and "no held-out verdict" in refused.json()["message"]
    assert _apply(operator, run, override=True).status_code == 200
    assert ProposalDecision.objects.get(run=run).override
