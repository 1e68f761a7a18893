"""Starting the policies' worker jobs: each service writes the job's row and enqueues its task
once the transaction commits (a worker must find the row). The tasks run the work in
`evaluation.py` and `training.py`, which never import this module."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from console.access.identity import Identity
from console.api.errors import ApplicationError
from console.policies.artifacts import artifact_problem
from console.policies.models import PolicyEvaluation, PolicyVersion, TrainingRun
from console.policies.selectors import active_policy_label
from console.policies.tasks import run_evaluation, run_training


def evaluation_request(
    *,
    policy: PolicyVersion,
    trace: str,
    loads: list[float],
    seeds: list[int],
    requested_by: Identity | None,
    recorded_hours: float | None = None,
    calibration_run: int | None = None,
) -> PolicyEvaluation:
    """Queue a simulator evaluation of `policy` against the active policy and the heuristics
    (on recorded traffic and a calibrated fleet when given: docs/twin.md)."""
    if (problem := artifact_problem(policy)) is not None:
        raise ApplicationError(problem, status_code=409)
    evaluation = PolicyEvaluation.objects.create(
        version=policy,
        baseline=active_policy_label(),
        trace=trace,
        loads=loads,
        seeds=seeds,
        recorded_hours=recorded_hours,
        calibration_run=calibration_run,
        requested_by_id=requested_by.user_id if requested_by else None,
        requested_by_key_id=requested_by.key_id if requested_by else None,
    )
    transaction.on_commit(lambda: run_evaluation.delay(evaluation.pk))
    return evaluation


def training_start(*, config: dict[str, Any], started_by: Identity | None) -> TrainingRun:
    """Queue a training run with `config` (the API's training request, validated); who
    started it registers its result (`training.training_execute`)."""
    run = TrainingRun.objects.create(
        config=config,
        started_by_id=started_by.user_id if started_by else None,
        started_by_key_id=started_by.key_id if started_by else None,
        started_by_name=started_by.name if started_by and not started_by.is_system else "",
    )
    transaction.on_commit(lambda: run_training.delay(run.pk))
    return run
