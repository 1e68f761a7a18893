"""Worker jobs for policies: each takes an id and calls one service. They are started by
`jobs.py` (evaluations, training runs) and by beat (the canary watchdog). The replays an
evaluation or a training run fans out are a task of their own, beside their dispatcher in
`fanout.py`."""

from __future__ import annotations

from celery import shared_task

from console.policies.canary import canary_check
from console.policies.evaluation import evaluation_execute
from console.policies.training import training_execute


@shared_task(acks_late=True)
def run_evaluation(evaluation_id: int) -> None:
    """Evaluate a version in the simulator (`evaluation.evaluation_execute`)."""
    evaluation_execute(evaluation_id=evaluation_id)


@shared_task
def canary_watchdog() -> str:
    """Roll a canary back by itself when it does worse than the active policy."""
    return canary_check()


@shared_task(acks_late=True)
def run_training(run_id: int) -> None:
    training_execute(run_id=run_id)
