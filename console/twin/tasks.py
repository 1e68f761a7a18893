"""Worker jobs for the twin: they only translate ids into service calls."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from console.twin.calibration import calibration_execute
from console.twin.probe_services import probe_check
from console.worker_stop import WorkerStopping


@shared_task(bind=True, acks_late=True, max_retries=None)
def run_calibration(self: Any, run_id: int) -> None:
    """Calibrate (`calibration.calibration_execute`); when the worker stops midway, the task
    sends itself again for the next start (console/worker_stop.py)."""
    try:
        calibration_execute(run_id=run_id)
    except WorkerStopping as stopping:
        raise self.retry(exc=stopping, countdown=0) from None


@shared_task
def check_probe() -> str:
    """End the running exploration probe by itself once it is done (`probe_check`)."""
    return probe_check()
