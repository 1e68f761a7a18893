"""The living demo schedules a calibration of its first minutes of traffic (docs/twin.md)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.management import call_command

from console.twin.models import CalibrationRun


def test_demo_prepare_schedules_one_calibration_of_the_first_minutes(
    db: Any, settings: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    settings.VAR_DIR = tmp_path
    settings.LOCUS_ARTIFACTS_DIR = tmp_path / "artifacts"
    settings.LOCUS_DEMO_CALIBRATION_MINUTES = 15
    with django_capture_on_commit_callbacks(execute=True):
        call_command("demo_prepare", "--no-training")
    run = CalibrationRun.objects.get()
    assert run.until - run.since == timedelta(minutes=15)
    assert run.requested_by_name == "system"
    # Celery is eager in tests, so the run happened at once, over a window without traffic.
    assert run.status == "failed" and "no decisions were recorded" in run.error
    call_command("demo_prepare", "--no-training")
    assert CalibrationRun.objects.count() == 1
