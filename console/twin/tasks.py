"""Worker jobs for the twin: they only translate ids into service calls."""

from __future__ import annotations

from celery import shared_task

from console.twin.calibration import calibration_execute


@shared_task(acks_late=True)
def run_calibration(run_id: int) -> None:
    calibration_execute(run_id=run_id)
