"""Training runs started from the console: a worker trains a PPO policy on the inventory's
fleet with `optimizer.rl.train` (by default fine-tuning the shipped generalist), fans its
validation replays out over the Celery workers, keeps the learning curve, reports progress on
the live stream, and registers the result as a candidate policy version (which another admin
must evaluate and approve) unless it validates below the best heuristic and the run did not
ask for `register_below_baseline`."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from itertools import count
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console.access.identity import Identity
from console.access.selectors import api_key_owner
from console.inventory.selectors import inventory_topology
from console.live.events import send_event
from console.policies.choices import JobStatus
from console.policies.fanout import fan_out
from console.policies.models import TrainingRun
from console.policies.services import policy_register
from console.twin.services import twin_inputs
from console.worker_stop import WorkerStopping, raise_if_stopping
from optimizer.heldout.guard import refuse_heldout
from optimizer.rl import fine_tune_guard
from optimizer.rl.replays import Job
from optimizer.topology_files import dump_topology

logger = logging.getLogger(__name__)
LOG_TAIL_LINES = 40
# Progress is written and announced at most this often, so a fast loop does not flood the
# database or the stream.
PROGRESS_INTERVAL_S = 1.0


def _starter(run: TrainingRun) -> Identity | None:
    """Who started the run, who thereby registers its result (None: the system)."""
    if not run.started_by_name:
        return None
    person = run.started_by_id
    if person is None and run.started_by_key_id is not None:
        person = api_key_owner(run.started_by_key_id)
    return Identity(
        run.started_by_name,
        user_id=run.started_by_id,
        key_id=run.started_by_key_id,
        person_id=person,
    )


def describe(metrics: dict[str, Any]) -> str:
    """One log line for a metrics record of `optimizer.rl.train`."""
    if metrics.get("event") == "fine_tune_guard":
        return fine_tune_guard.describe(metrics)
    shown = []
    for key, value in metrics.items():
        if isinstance(value, float):
            value = f"{value:.4g}"
        elif isinstance(value, list):
            value = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
        shown.append(f"{key}={value}")
    return " ".join(shown)


class _Reporter:
    """Turns `train`'s progress callbacks into throttled database updates and events; every
    baseline and validation record joins the learning curve at once, PPO statistics at most
    once per `PROGRESS_INTERVAL_S`."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.lines: list[str] = []
        self.metrics: list[dict[str, Any]] = []
        self.last = 0.0

    def __call__(self, fraction: float, metrics: dict[str, Any]) -> None:
        # Every record is a step boundary (a PPO rollout, a validation): the place to stop.
        raise_if_stopping()
        message = describe(metrics)
        self.lines = [*self.lines, message][-LOG_TAIL_LINES:]
        now = time.monotonic()
        milestone = metrics.get("event") == "validation" or metrics["phase"] == "baselines"
        if not milestone and now - self.last < PROGRESS_INTERVAL_S and fraction < 1.0:
            return
        self.metrics.append(metrics)
        self.last = now
        TrainingRun.objects.filter(pk=self.run_id).update(
            progress=fraction, log_tail="\n".join(self.lines), metrics=self.metrics
        )
        send_event(
            "training.progress",
            {
                "run_id": self.run_id,
                "status": JobStatus.RUNNING,
                "progress": fraction,
                "message": message,
            },
        )


def training_execute(*, run_id: int) -> None:
    """The worker's side: train, then register the artifact as a candidate version."""
    # Training's stack (torch, stable-baselines3, gymnasium: ~4.5 s to import) loads only in
    # the worker that trains, never in the web process that imports the tasks to enqueue them.
    from optimizer.rl.config import TrainConfig
    from optimizer.rl.train import train

    run = TrainingRun.objects.get(pk=run_id)
    if run.status in (JobStatus.SUCCEEDED, JobStatus.FAILED):
        return  # redelivered after it finished
    out = Path(settings.LOCUS_ARTIFACTS_DIR) / "training-runs" / str(run_id)
    out.mkdir(parents=True, exist_ok=True)
    config = run.config
    reporter = _Reporter(run_id)
    replays = count()

    def map_replays(jobs: Sequence[Job]) -> list[dict[str, Any]]:
        # A fresh directory per batch (and per delivery: a redelivered run starts afresh).
        batch = out / "replays" / f"{uuid.uuid4().hex[:8]}-{next(replays)}"
        return fan_out(jobs, batch)

    init = config.get("init", "imitation")
    try:
        # Recorded traffic as the trace and the calibrated fleet as the topology, when asked
        # (docs/twin.md); the report names them and the twin's fidelity.
        twin = twin_inputs(
            recorded_hours=config.get("recorded_hours"),
            calibration_run=config.get("calibration_run"),
            out=out,
        )
        topology_path = out / "topology.yaml"
        fleet = twin.topology or inventory_topology()
        topology_path.write_text(dump_topology(fleet), encoding="utf-8")
        # Training and model selection never see the held-out suite (issue #26).
        refuse_heldout([topology_path])
        TrainingRun.objects.filter(pk=run_id).update(
            status=JobStatus.RUNNING, artifact_dir=str(out)
        )
        result = train(
            TrainConfig(
                topology=str(topology_path),
                trace=twin.trace or config["trace"],
                out=str(out),
                init=None if init == "imitation" else init,
                timesteps=int(config.get("timesteps", settings.LOCUS_TRAINING_TIMESTEPS)),
                seed=int(config.get("seed", 0)),
                bc_steps=int(config.get("bc_steps", settings.LOCUS_TRAINING_BC_STEPS)),
                eval_trace=config.get("eval_trace"),
                window=settings.LOCUS_TRAINING_WINDOW,
                threads=1,
            ),
            progress=reporter,
            map_replays=map_replays,
        )
    except WorkerStopping:
        # Back to the queue: the task requeues its message and the next worker start trains
        # again from the beginning (a fresh directory per batch; the artifact is rewritten).
        logger.info("training run %s requeued: its worker is stopping", run_id)
        TrainingRun.objects.filter(pk=run_id).update(
            status=JobStatus.QUEUED,
            progress=0.0,
            log_tail="\n".join([*reporter.lines, "requeued: the worker stopped"]),
        )
        send_event(
            "training.progress",
            {
                "run_id": run_id,
                "status": JobStatus.QUEUED,
                "progress": 0.0,
                "message": "requeued: the worker stopped; it starts again with the worker",
            },
        )
        raise
    except Exception as exc:
        logger.exception("training run %s failed", run_id)
        TrainingRun.objects.filter(pk=run_id).update(
            status=JobStatus.FAILED,
            error=str(exc),
            finished_at=timezone.now(),
            log_tail="\n".join(reporter.lines),
        )
        send_event(
            "training.progress",
            {"run_id": run_id, "status": JobStatus.FAILED, "progress": 0.0, "message": str(exc)},
        )
        return
    best = result.baselines["best_heuristic"]
    register = not result.below_baseline or bool(config.get("register_below_baseline"))
    if result.below_baseline:
        verdict = (
            f"validation attainment {result.validation['slo_attainment']:.2%} is below the best "
            f"heuristic's ({best['name']}, {best['slo_attainment']:.2%})"
        )
        verdict += (
            "; registered anyway (register_below_baseline)"
            if register
            else "; not registered as a candidate (start it with register_below_baseline to "
            "register it anyway)"
        )
    with transaction.atomic():
        version = None
        if register:
            version = policy_register(
                name="ppo",
                version=f"run-{run_id}",
                artifact_dir=str(result.out),
                registered_by=_starter(run),
            )
            message = f"registered {version} as a candidate"
        if result.below_baseline:
            message = verdict
        TrainingRun.objects.filter(pk=run_id).update(
            status=JobStatus.SUCCEEDED,
            progress=1.0,
            finished_at=timezone.now(),
            report={
                "validation": result.validation,
                "baselines": {
                    "teacher": result.baselines["teacher"],
                    "best_heuristic": best,
                },
                "below_baseline": result.below_baseline,
                "evaluation": result.evaluation,
                "wall_seconds": result.wall_seconds,
                **({"data": twin.data} if twin.data else {}),
            },
            below_baseline=result.below_baseline,
            metrics=reporter.metrics,
            version=version,
            log_tail="\n".join([*reporter.lines, message][-LOG_TAIL_LINES:]),
        )
        send_event(
            "training.progress",
            {
                "run_id": run_id,
                "status": JobStatus.SUCCEEDED,
                "progress": 1.0,
                "message": message,
            },
        )
