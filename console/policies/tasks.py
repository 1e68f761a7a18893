"""Worker jobs for policies: evaluations, the canary watchdog, training runs."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from console.policies.choices import JobStatus
from console.policies.models import PolicyEvaluation

logger = logging.getLogger(__name__)


@shared_task(acks_late=True)
def run_evaluation(evaluation_id: int) -> None:
    """Evaluate a version in the simulator on the inventory's own fleet, or on the twin's
    calibrated fleet and recorded traffic when the evaluation asks (docs/twin.md)."""
    from pathlib import Path

    from console.inventory.selectors import inventory_topology
    from console.policies.artifacts import artifact_problem
    from console.policies.evaluation import evaluate_versions
    from console.policies.selectors import active_policy_spec
    from console.twin.services import twin_inputs
    from telemetry.conf import scrape_interval_seconds

    evaluation = PolicyEvaluation.objects.select_related("version").get(pk=evaluation_id)
    if evaluation.status == JobStatus.SUCCEEDED:
        return  # redelivered after it finished: nothing to do
    if (problem := artifact_problem(evaluation.version)) is not None:
        _finish(evaluation_id, JobStatus.FAILED, error=problem)
        return
    PolicyEvaluation.objects.filter(pk=evaluation_id).update(status=JobStatus.RUNNING, progress=0.0)

    def progress(fraction: float) -> None:
        PolicyEvaluation.objects.filter(pk=evaluation_id).update(progress=fraction)

    try:
        twin = twin_inputs(
            recorded_hours=evaluation.recorded_hours,
            calibration_run=evaluation.calibration_run,
            out=Path(settings.LOCUS_ARTIFACTS_DIR) / "evaluations" / str(evaluation_id),
        )
        report = evaluate_versions(
            evaluation_id=evaluation_id,
            topology=twin.topology or inventory_topology(),
            trace=twin.trace or evaluation.trace,
            candidate=evaluation.version.spec,
            baseline=active_policy_spec(),
            loads=[float(x) for x in evaluation.loads],
            seeds=[int(s) for s in evaluation.seeds],
            limit=settings.LOCUS_EVALUATION_LIMIT,
            # What a canary will see: node state through the fleet's scrape interval.
            telemetry_interval_s=scrape_interval_seconds(),
            progress=progress,
        )
    except Exception as exc:
        logger.exception("evaluation %s failed", evaluation_id)
        _finish(evaluation_id, JobStatus.FAILED, error=str(exc))
        return
    if twin.data:
        report["data"] = twin.data  # which recorded traffic and fleet, and the twin's fidelity
    _finish(evaluation_id, JobStatus.SUCCEEDED, report=report)


def _finish(evaluation_id: int, status: str, **fields: Any) -> None:
    PolicyEvaluation.objects.filter(pk=evaluation_id).update(
        status=status, finished_at=timezone.now(), progress=1.0, **fields
    )


@shared_task(acks_late=True)
def run_replay_job(job: dict[str, Any], work_dir: str, index: int) -> bool:
    """One replay of a fanned-out evaluation or training validation (console.policies.fanout)."""
    from console.policies.fanout import run_claimed

    return run_claimed(job, work_dir, index)


@shared_task
def canary_watchdog() -> str:
    """Roll a canary back by itself when it does worse than the active policy."""
    from console.policies.canary import canary_check

    return canary_check()


@shared_task(acks_late=True)
def run_training(run_id: int) -> None:
    from console.policies.training import training_execute

    training_execute(run_id=run_id)
