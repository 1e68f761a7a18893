"""Writes for the twin: calibration runs, their execution, and deciding their proposals."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console.access.identity import Identity
from console.api.errors import ApplicationError
from console.inventory.models import Profile
from console.inventory.services import inventory_write
from console.live.events import send_event
from console.twin.choices import ProposalState, RunStatus
from console.twin.models import CalibrationRun, ProposalDecision
from console.twin.selectors import PROFILE_FIELDS, observation_records, proposal_changes
from optimizer.errors import InputFileError
from optimizer.observations import write_observations
from optimizer.topology import Topology
from optimizer.topology_files import parse_topology

logger = logging.getLogger(__name__)
# Progress is written and announced at most this often.
PROGRESS_INTERVAL_S = 1.0


def calibration_start(
    *,
    since: datetime,
    until: datetime,
    min_samples: int,
    requested_by: Identity,
    after_s: float = 0.0,
) -> CalibrationRun:
    """Queue a calibration over the traffic recorded in [since, until), to run `after_s`
    seconds from now (a window still to come: the demo's first calibration)."""
    from console.twin.tasks import run_calibration

    run = CalibrationRun.objects.create(
        since=since, until=until, min_samples=min_samples, requested_by_name=requested_by.name
    )
    transaction.on_commit(lambda: run_calibration.apply_async((run.pk,), countdown=after_s or None))
    return run


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
        now = time.monotonic()
        if now - self.last < PROGRESS_INTERVAL_S and fraction < 1.0:
            return
        self.last = now
        CalibrationRun.objects.filter(pk=self.run_id).update(progress=fraction, message=message)
        _announce(self.run_id, RunStatus.RUNNING, fraction, message)


def calibration_execute(*, run_id: int) -> None:
    """The worker's side: export the window's observations, calibrate the inventory's fleet
    against them, and keep the report and the calibrated fleet as a pending proposal."""
    from console.inventory.selectors import inventory_topology
    from optimizer.calibration import calibrate
    from optimizer.observations import load_observations
    from optimizer.topology_files import dump_topology

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


def _pending(run: CalibrationRun) -> None:
    if run.status != RunStatus.SUCCEEDED or run.proposal != ProposalState.PENDING:
        raise ApplicationError(
            f"Calibration run {run.pk} has no pending proposal "
            f"(status {run.status}, proposal {run.proposal or 'none'}).",
            status_code=409,
        )


def proposal_apply(*, run: CalibrationRun, actor: Identity, reason: str) -> ProposalDecision:
    """Set the inventory's profiles to the run's fitted values, through the inventory's own
    write path (the whole inventory is checked as a topology, and the revision moves so every
    decision engine picks the new speeds up), and audit it. Refused (409) when the proposal is
    not pending or when a profile changed since the run measured it."""
    with inventory_write():
        run = CalibrationRun.objects.select_for_update().get(pk=run.pk)
        _pending(run)
        changes = proposal_changes(run)
        profiles = {
            (p.model.name, p.accelerator.name): p
            for p in Profile.objects.select_related("model", "accelerator")
        }
        stale = []
        for change in changes:
            profile = profiles.get((change["model"], change["accelerator"]))
            if profile is None or getattr(profile, change["field"]) != change["nominal"]:
                stale.append(f"{change['model']}@{change['accelerator']}.{change['field']}")
        if stale:
            raise ApplicationError(
                "The inventory changed since this run measured it; start a new run.",
                status_code=409,
                errors={"profiles": sorted(set(stale))},
            )
        touched: dict[tuple[str, str], Profile] = {}
        for change in changes:
            profile = profiles[(change["model"], change["accelerator"])]
            setattr(profile, change["field"], change["fitted"])
            touched[(change["model"], change["accelerator"])] = profile
        for profile in touched.values():
            profile.save(update_fields=list(PROFILE_FIELDS))
        return _decide(run, ProposalState.APPLIED, actor, reason, changes)


def proposal_discard(*, run: CalibrationRun, actor: Identity, reason: str) -> ProposalDecision:
    """Close the run's proposal without changing the inventory, and audit it."""
    with transaction.atomic():
        run = CalibrationRun.objects.select_for_update().get(pk=run.pk)
        _pending(run)
        return _decide(run, ProposalState.DISCARDED, actor, reason, [])


def _decide(
    run: CalibrationRun,
    action: str,
    actor: Identity,
    reason: str,
    changes: list[dict[str, Any]],
) -> ProposalDecision:
    run.proposal = action
    run.save(update_fields=["proposal"])
    return ProposalDecision.objects.create(
        run=run, action=action, actor=actor.name, reason=reason, changes=changes
    )


@dataclass(frozen=True)
class TwinInputs:
    """What a training or evaluation run takes from the twin instead of its defaults: the
    recorded traffic as its trace, the calibrated fleet as its topology, and what its report
    says about both (`data`)."""

    trace: str | None
    topology: Topology | None
    data: dict[str, Any]


def twin_inputs(
    *, recorded_hours: float | None, calibration_run: int | None, out: Path
) -> TwinInputs:
    """Write the last `recorded_hours` of recorded traffic into `out` as a trace, and take the
    calibrated fleet of `calibration_run` (a succeeded run); either may be None (not asked).
    Raises ValueError when the calibration run is gone or did not succeed."""
    data: dict[str, Any] = {}
    trace = None
    topology = None
    if recorded_hours is not None:
        until = timezone.now()
        since = until - timedelta(hours=recorded_hours)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "recorded.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            count = write_observations(handle, observation_records(since=since, until=until))
        trace = str(path)
        data["trace"] = {
            "kind": "recorded traffic",
            "hours": recorded_hours,
            "since": since.isoformat(),
            "until": until.isoformat(),
            "observations": count,
        }
    if calibration_run is not None:
        run = CalibrationRun.objects.filter(pk=calibration_run, status=RunStatus.SUCCEEDED).first()
        if run is None:
            raise ValueError(f"calibration run {calibration_run} is gone or did not succeed")
        topology = parse_topology(run.calibrated_topology, f"calibration run {run.pk}")
        data["topology"] = {
            "kind": "calibrated fleet",
            "calibration_run": run.pk,
            "proposal": run.proposal,
            "observations": run.observations,
            "fidelity": run.report.get("fidelity"),
        }
    return TwinInputs(trace=trace, topology=topology, data=data)
