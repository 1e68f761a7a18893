"""The worker's side of a calibration run (`services.calibration_start` queues it): export the
window's recorded decisions as observations, fit the inventory's fleet to them
(`optimizer.calibration`), and keep the report and the calibrated fleet as a pending
proposal, announcing progress on the live stream."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from console.inventory.selectors import inventory_topology
from console.live.events import send_event
from console.twin.choices import ProposalState, RunStatus
from console.twin.models import CalibrationRun
from console.twin.selectors import observation_records
from console.worker_stop import WorkerStopping, raise_if_stopping
from optimizer.calibration import calibrate
from optimizer.errors import InputFileError
from optimizer.observations import load_observations, write_observations
from optimizer.topology_files import dump_topology

logger = logging.getLogger(__name__)
# Progress is written and announced at most this often.
PROGRESS_INTERVAL_S = 1.0


def _announce(run_id: int, status: str, progress: float, message: str) -> None:
    send_event(
        "calibration.progress",
        {"run_id": run_id, "status": status, "progress": progress, "message": message},
    )


class _Progress:
    """Turns calibration progress callbacks into throttled updates and live events."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.last = 0.0

    def __call__(self, fraction: float, message: str) -> None:
        raise_if_stopping()  # between two iterations: the place to stop (worker_stop.py)
        now = time.monotonic()
        if now - self.last < PROGRESS_INTERVAL_S and fraction < 1.0:
            return
        self.last = now
        CalibrationRun.objects.filter(pk=self.run_id).update(progress=fraction, message=message)
        _announce(self.run_id, RunStatus.RUNNING, fraction, message)


def calibration_execute(*, run_id: int) -> None:
    """The worker's side: export the window's observations, calibrate the inventory's fleet
    against them, and keep the report and the calibrated fleet as a pending proposal."""
    run = CalibrationRun.objects.get(pk=run_id)
    if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
        return  # redelivered after it finished
    CalibrationRun.objects.filter(pk=run_id).update(status=RunStatus.RUNNING, progress=0.0)
    progress = _Progress(run_id)
    out = Path(settings.LOCUS_ARTIFACTS_DIR) / "calibration-runs" / str(run_id)
    try:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "observations.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            count = write_observations(
                handle, observation_records(since=run.since, until=run.until)
            )
        CalibrationRun.objects.filter(pk=run_id).update(observations=count)
        progress(0.05, f"exported {count} observations")
        if count == 0:
            raise InputFileError(str(path), ["no decisions were recorded in the window"])
        nominal = inventory_topology()
        result = calibrate(
            nominal,
            load_observations(path, nominal),
            min_samples=run.min_samples,
            progress=lambda f, m: progress(0.05 + 0.95 * f, m),
        )
    except WorkerStopping:
        # Back to the queue (the task sends itself again); the next start fits afresh.
        logger.info("calibration run %s requeued: its worker is stopping", run_id)
        CalibrationRun.objects.filter(pk=run_id).update(
            status=RunStatus.QUEUED, progress=0.0, message="requeued: the worker stopped"
        )
        _announce(run_id, RunStatus.QUEUED, 0.0, "requeued: the worker stopped")
        raise
    except InputFileError as exc:
        _fail(run_id, "; ".join(exc.problems))
        return
    except Exception as exc:
        logger.exception("calibration run %s failed", run_id)
        _fail(run_id, str(exc))
        return
    CalibrationRun.objects.filter(pk=run_id).update(
        status=RunStatus.SUCCEEDED,
        progress=1.0,
        message="done",
        report=result.report,
        nominal_topology=dump_topology(nominal),
        calibrated_topology=dump_topology(result.topology),
        proposal=ProposalState.PENDING,
        finished_at=timezone.now(),
    )
    _announce(run_id, RunStatus.SUCCEEDED, 1.0, "done")


def _fail(run_id: int, error: str) -> None:
    CalibrationRun.objects.filter(pk=run_id).update(
        status=RunStatus.FAILED, error=error, finished_at=timezone.now()
    )
    _announce(run_id, RunStatus.FAILED, 0.0, error[:300])
