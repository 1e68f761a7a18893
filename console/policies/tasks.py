"""Worker jobs for policies: each takes an id and calls one service. They are started by
`jobs.py` (evaluations, training runs) and by beat (the canary watchdog). The replays an
evaluation or a training run fans out are a task of their own, beside their dispatcher in
`fanout.py`."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from console.policies.canary import canary_check
from console.policies.evaluation import evaluation_execute
from console.policies.training import training_execute
from console.worker_stop import WorkerStopping

# A long job whose worker stops puts its row back to queued and raises `WorkerStopping`
# (console/worker_stop.py); the task then sends itself again, at once and with the same id,
# for the next worker start. A retry, not `Reject(requeue=True)`: Celery logs a rejection as
# a warning with a traceback, on every Ctrl-C of `make run`. Never counted against a limit.
_REQUEUE: dict[str, Any] = {"bind": True, "acks_late": True, "max_retries": None}


@shared_task(**_REQUEUE)
def run_evaluation(self: Any, evaluation_id: int) -> None:
    """Evaluate a version in the simulator (`evaluation.evaluation_execute`)."""
    try:
        evaluation_execute(evaluation_id=evaluation_id)
    except WorkerStopping as stopping:
        raise self.retry(exc=stopping, countdown=0) from None


@shared_task
def canary_watchdog() -> str:
    """Roll a canary back by itself when it does worse than the active policy."""
    return canary_check()


@shared_task(**_REQUEUE)
def run_training(self: Any, run_id: int) -> None:
    """Train a policy and register it (`training.training_execute`); when the worker stops
    midway, the message goes back to the queue (`console.worker_stop`)."""
    try:
        training_execute(run_id=run_id)
    except WorkerStopping as stopping:
        raise self.retry(exc=stopping, countdown=0) from None
