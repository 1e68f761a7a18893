"""Writes for the twin: starting calibration runs (a worker runs them: `calibration.py`),
deciding their proposals, and the inputs a training or evaluation run takes from the twin."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from console.access.identity import Identity
from console.api.errors import ApplicationError
from console.inventory.models import Link, Profile
from console.inventory.services import inventory_write
from console.twin.choices import ProposalState, RunStatus
from console.twin.models import CalibrationRun, ProposalDecision
from console.twin.selectors import (
    PROFILE_FIELDS,
    observation_records,
    proposal_changes,
    proposal_link_changes,
    proposal_verdict,
)
from console.twin.tasks import run_calibration
from optimizer.calibration.holdout import IMPROVED
from optimizer.observations import write_observations
from optimizer.topology import Topology
from optimizer.topology_files import parse_topology


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
    run = CalibrationRun.objects.create(
        since=since, until=until, min_samples=min_samples, requested_by_name=requested_by.name
    )
    transaction.on_commit(lambda: run_calibration.apply_async((run.pk,), countdown=after_s or None))
    return run


def _pending(run: CalibrationRun) -> None:
    if run.status != RunStatus.SUCCEEDED or run.proposal != ProposalState.PENDING:
        raise ApplicationError(
            f"Calibration run {run.pk} has no pending proposal "
            f"(status {run.status}, proposal {run.proposal or 'none'}).",
            status_code=409,
        )


def proposal_apply(
    *, run: CalibrationRun, actor: Identity, reason: str, override: bool = False
) -> ProposalDecision:
    """Set the inventory's profiles and link bandwidths to the run's fitted values, through
    the inventory's own write path (the whole inventory is checked as a topology, and the
    revision moves so every decision engine picks the new values up), and audit it. Refused
    (409) when the proposal is not pending, when its verdict is 'no_improvement' and
    `override` is not set (the audit entry of an override records it), or when a profile or
    link changed since the run measured it."""
    with inventory_write():
        run = CalibrationRun.objects.select_for_update().get(pk=run.pk)
        _pending(run)
        verdict = proposal_verdict(run)
        overriding = verdict["verdict"] != IMPROVED
        if overriding and not override:
            raise ApplicationError(
                f"Calibration run {run.pk}'s proposal does not improve the held-out errors "
                f"({verdict['reason']}); apply it with override: true and a reason, or "
                "discard it.",
                status_code=409,
                errors={
                    "override": ["Required to apply a proposal whose verdict is no_improvement."]
                },
            )
        changes = proposal_changes(run)
        link_changes = proposal_link_changes(run)
        profiles = {
            (p.model.name, p.accelerator.name): p
            for p in Profile.objects.select_related("model", "accelerator")
        }
        links = {
            frozenset((lk.site_a.name, lk.site_b.name)): lk
            for lk in Link.objects.select_related("site_a", "site_b")
        }
        stale: dict[str, set[str]] = {"profiles": set(), "links": set()}
        for change in changes:
            profile = profiles.get((change["model"], change["accelerator"]))
            if profile is None or getattr(profile, change["field"]) != change["nominal"]:
                stale["profiles"].add(
                    f"{change['model']}@{change['accelerator']}.{change['field']}"
                )
        for change in link_changes:
            link = links.get(frozenset((change["a"], change["b"])))
            if link is None or link.bandwidth_gbps != change["nominal"]:
                stale["links"].add(f"{change['a']}-{change['b']}.{change['field']}")
        if any(stale.values()):
            raise ApplicationError(
                "The inventory changed since this run measured it; start a new run.",
                status_code=409,
                errors={key: sorted(names) for key, names in stale.items() if names},
            )
        touched: dict[tuple[str, str], Profile] = {}
        for change in changes:
            profile = profiles[(change["model"], change["accelerator"])]
            setattr(profile, change["field"], change["fitted"])
            touched[(change["model"], change["accelerator"])] = profile
        for profile in touched.values():
            profile.save(update_fields=list(PROFILE_FIELDS))
        for change in link_changes:
            link = links[frozenset((change["a"], change["b"]))]
            link.bandwidth_gbps = change["fitted"]
            link.save(update_fields=["bandwidth_gbps"])
        return _decide(
            run, ProposalState.APPLIED, actor, reason, changes + link_changes, override=overriding
        )


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
    *,
    override: bool = False,
) -> ProposalDecision:
    run.proposal = action
    run.save(update_fields=["proposal"])
    return ProposalDecision.objects.create(
        run=run,
        action=action,
        actor=actor.name,
        reason=reason,
        changes=changes,
        override=override,
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
