"""The twin API's edges: who may read and act, window validation, too little data, discarding
and stale proposals."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from console.inventory.models import Profile
from console.twin.models import CalibrationRun, ProposalDecision

NOW = datetime.now(UTC)
WINDOW = {"since": (NOW - timedelta(hours=1)).isoformat(), "until": NOW.isoformat()}
REQUEST = {
    "model": "llama-3.1-8b",
    "source": "munich-app",
    "prompt_tokens": 900,
    "max_output_tokens": 50,
    "prefix_hashes": [1, 2],
}


@pytest.mark.parametrize(("role", "code"), [(None, 401), ("service", 403), ("viewer", 200)])
def test_observations_are_for_viewers_and_up(
    demo_engine: Any, client_for: Any, role: str | None, code: int
) -> None:
    assert client_for(role).get("/api/v1/observations", WINDOW).status_code == code


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"since": "2026-11-24T09:00:00", "until": WINDOW["until"]}, "since"),
        ({"since": WINDOW["since"], "until": "yesterday"}, "until"),
        ({"since": WINDOW["since"]}, "until"),
        ({"since": WINDOW["until"], "until": WINDOW["since"]}, "until"),
        ({"since": "2020-01-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "until"),
        ({"since": "2026-11-24T09:00:00Z\x00", "until": WINDOW["until"]}, "since"),
        ({"since": "9" * 5000, "until": WINDOW["until"]}, "since"),
    ],
)
def test_a_bad_window_is_a_400_naming_the_field(
    demo_engine: Any, client_for: Any, query: dict[str, str], field: str
) -> None:
    response = client_for("viewer").get("/api/v1/observations", query)
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_the_export_command_refuses_a_bad_window(demo_engine: Any, tmp_path: Any) -> None:
    out = tmp_path / "o.jsonl"
    with pytest.raises(CommandError, match="--until: Must be later than since"):
        call_command(
            "export_observations",
            "--since",
            WINDOW["until"],
            "--until",
            WINDOW["since"],
            "--out",
            str(out),
        )
    assert not out.exists()


def _record(client_for: Any, engine: Any, count: int) -> None:
    service = client_for("service")
    for _ in range(count):
        decision = service.post("/api/v1/placements", REQUEST, format="json").json()
        service.post(
            f"/api/v1/placements/{decision['decision_id']}/outcome",
            {"ttft_ms": 120.0, "e2e_ms": 900.0, "ok": True},
            format="json",
        )
    engine.recorder.flush()


def _calibrate(client: Any, capture: Any, **body: Any) -> dict[str, Any]:
    with capture(execute=True):
        started = client.post("/api/v1/calibration-runs", {"hours": 2, **body}, format="json")
    assert started.status_code == 202, started.content
    return dict(started.json()) | {"id": started.json()["id"]}


def test_too_little_data_fails_the_run_naming_profiles_and_changes_nothing(
    demo_engine: Any,
    client_for: Any,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
    tmp_path: Any,
) -> None:
    settings.LOCUS_ARTIFACTS_DIR = tmp_path
    _record(client_for, demo_engine, 5)
    before = list(Profile.objects.values_list("prefill_tokens_per_s", flat=True))
    operator = client_for("operator")
    run_id = _calibrate(operator, django_capture_on_commit_callbacks)["id"]
    run = client_for("viewer").get(f"/api/v1/calibration-runs/{run_id}").json()
    assert run["status"] == "failed" and run["proposal"] == ""
    assert "too little data" in run["error"] and "llama-3.1-8b@h100" in run["error"]
    assert run["observations"] == 5
    answer = operator.post(
        f"/api/v1/calibration-runs/{run_id}/apply", {"reason": "try"}, format="json"
    )
    assert answer.status_code == 409
    assert list(Profile.objects.values_list("prefill_tokens_per_s", flat=True)) == before


def test_a_window_without_traffic_fails_the_run(
    demo_engine: Any,
    client_for: Any,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
    tmp_path: Any,
) -> None:
    settings.LOCUS_ARTIFACTS_DIR = tmp_path
    run_id = _calibrate(client_for("operator"), django_capture_on_commit_callbacks)["id"]
    run = CalibrationRun.objects.get(pk=run_id)
    assert run.status == "failed" and "no decisions were recorded" in run.error


@pytest.mark.parametrize(("role", "code"), [("viewer", 403), ("service", 403), (None, 401)])
def test_only_operators_start_runs(
    demo_engine: Any, client_for: Any, role: str | None, code: int
) -> None:
    response = client_for(role).post("/api/v1/calibration-runs", {"hours": 1}, format="json")
    assert response.status_code == code
    assert not CalibrationRun.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"hours": 0}, "hours"),
        ({"hours": 1e9}, "hours"),
        ({"hours": "1"}, "hours"),
        ({"hours": 1, "min_samples": 0}, "min_samples"),
        ({}, "hours"),
    ],
)
def test_a_bad_run_request_is_a_400(
    demo_engine: Any, client_for: Any, body: dict[str, Any], field: str
) -> None:
    response = client_for("operator").post("/api/v1/calibration-runs", body, format="json")
    assert response.status_code == 400 and field in response.json()["errors"]


IMPROVED = {"verdict": "improved", "reason": "better", "worse": [], "held_out": 100}


def _pending_run(**report: Any) -> CalibrationRun:
    value = {"nominal": 18000.0, "fitted": 15000.0, "interval": [14800.0, 15200.0], "samples": 500}
    same = {"nominal": 9.0, "fitted": 9.0, "interval": [8.9, 9.1], "samples": 500}
    return CalibrationRun.objects.create(
        since=NOW - timedelta(hours=1),
        until=NOW,
        min_samples=50,
        status="succeeded",
        proposal="pending",
        requested_by_name="system",
        report={
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
            "verdict": IMPROVED,
            **report,
        },
    )


def test_discarding_audits_and_changes_nothing(demo_engine: Any, client_for: Any) -> None:
    run = _pending_run()
    operator = client_for("operator")
    assert (
        client_for("viewer")
        .post(f"/api/v1/calibration-runs/{run.pk}/discard", {"reason": "no"}, format="json")
        .status_code
        == 403
    )
    assert (
        operator.post(
            f"/api/v1/calibration-runs/{run.pk}/discard", {"reason": " "}, format="json"
        ).status_code
        == 400
    )
    answer = operator.post(
        f"/api/v1/calibration-runs/{run.pk}/discard",
        {"reason": "maintenance week"},
        format="json",
    )
    assert answer.status_code == 200 and answer.json()["action"] == "discarded"
    profile = Profile.objects.get(model__name="llama-3.1-8b", accelerator__name="h100")
    assert profile.prefill_tokens_per_s == 18000
    listed = client_for("viewer").get("/api/v1/calibration-runs?proposal=discarded").json()
    assert [r["id"] for r in listed["results"]] == [run.pk]
    assert listed["results"][0]["decisions"][0]["reason"] == "maintenance week"


def test_a_proposal_over_changed_values_is_refused(demo_engine: Any, client_for: Any) -> None:
    run = _pending_run()
    operator = client_for("operator")
    changes = client_for("viewer").get(f"/api/v1/calibration-runs/{run.pk}").json()["changes"]
    assert [(c["field"], c["fitted"]) for c in changes] == [("prefill_tokens_per_s", 15000.0)]
    Profile.objects.filter(model__name="llama-3.1-8b", accelerator__name="h100").update(
        prefill_tokens_per_s=17000
    )
    answer = operator.post(
        f"/api/v1/calibration-runs/{run.pk}/apply", {"reason": "go"}, format="json"
    )
    assert answer.status_code == 409
    assert answer.json()["errors"]["profiles"] == ["llama-3.1-8b@h100.prefill_tokens_per_s"]
    assert not ProposalDecision.objects.exists()


def test_an_asgi_server_gets_the_observations_streamed_chunk_by_chunk(
    demo_engine: Any, client_for: Any
) -> None:
    """Under ASGI the body is an async iterator: Django would read a synchronous one whole
    into memory before sending a byte (StreamingHttpResponse.__aiter__)."""
    import warnings

    from asgiref.sync import async_to_sync
    from django.contrib.auth.models import Group, User
    from django.http import StreamingHttpResponse
    from django.test import AsyncClient

    _record(client_for, demo_engine, 3)
    user = User.objects.create_user("asgi-viewer")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = AsyncClient()
    now = datetime.now(UTC)
    window = {
        "since": (now - timedelta(minutes=5)).isoformat(),
        "until": (now + timedelta(minutes=5)).isoformat(),
    }

    async def fetch() -> tuple[Any, bytes]:
        await client.aforce_login(user)
        response = await client.get("/api/v1/observations", window)
        assert isinstance(response, StreamingHttpResponse)
        # A synchronous body would be a plain Iterator here (read whole before the first byte).
        content = response.streaming_content
        assert isinstance(content, AsyncIterator)
        body = b"".join([chunk async for chunk in content])
        return response, body

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "must consume synchronous iterators" would raise
        response, body = async_to_sync(fetch)()
    assert response.status_code == 200 and response.is_async
    synchronous = client_for("viewer").get("/api/v1/observations", window)
    assert body == b"".join(synchronous.streaming_content)
    assert len(body.splitlines()) == 3


def test_a_training_run_whose_calibration_run_vanished_fails_with_the_reason(
    demo_engine: Any,
    client_for: Any,
    django_capture_on_commit_callbacks: Any,
    settings: Any,
    tmp_path: Any,
) -> None:
    settings.LOCUS_ARTIFACTS_DIR = tmp_path
    run = _pending_run()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        started = client_for("admin").post(
            "/api/v1/training-runs",
            {"calibration_run": run.pk, "timesteps": 256},
            format="json",
        )
    assert started.status_code == 202, started.content
    run.delete()
    for callback in callbacks:
        callback()
    training = client_for("viewer").get(f"/api/v1/training-runs/{started.json()['id']}").json()
    assert training["status"] == "failed"
    assert "is gone or did not succeed" in training["error"]
