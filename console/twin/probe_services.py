"""Writes for exploration probes (issue #26; docs/twin.md, "Exploration probe"): proposing
one, the steps of its life under a canary's rules, and the check that ends it by itself.

proposed ──approve──▶ approved ──start──▶ running ──(budget, deadline, observed)──▶ completed
    └──────────────────────── abort at any time ─────────────────────────▶ aborted

The rules are the canary's (docs/rollouts.md, docs/operations.md "Four eyes"), since a probe
too sends live traffic where the policy would not:
- every step is an admin's, takes a non-blank reason, is audited and sent on the live stream;
- approving needs a person other than the proposer's (their own API keys count as them);
- approving and starting need a person behind the caller; a probe proposed by no person
  (a key without an owner) needs two distinct people, so its approver may not start it;
- aborting needs only the role (a key without a person may abort, as it may roll back);
- one probe runs at a time (also enforced by the database).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from console.access.identity import SYSTEM, Identity
from console.api.errors import ApplicationError
from console.live.events import send_event
from console.twin.choices import ProbeState, RunStatus
from console.twin.models import CalibrationRun, ExplorationProbe, ProbeTransition
from console.twin.probe_selectors import (
    node_models,
    probe_sent,
    target_observations,
    under_observed_targets,
)

# A probe sends live requests where the policy would not: at most 5% of decisions, 1% unless
# asked (the example share).
MAX_SHARE = 0.05
DEFAULT_SHARE = 0.01

# action -> (states it may start from, state it leads to)
STEPS: dict[str, tuple[frozenset[str], str]] = {
    "approve": (frozenset({ProbeState.PROPOSED}), ProbeState.APPROVED),
    "start": (frozenset({ProbeState.APPROVED}), ProbeState.RUNNING),
    "abort": (
        frozenset({ProbeState.PROPOSED, ProbeState.APPROVED, ProbeState.RUNNING}),
        ProbeState.ABORTED,
    ),
}


def _targets(run: CalibrationRun | None, nodes: list[str] | None) -> list[dict[str, Any]]:
    """The (node, model) pairs a new probe may send to: the run's under-observed pairs, each
    with why (only on `nodes`, when named), or every model each named node serves."""
    if nodes is not None:
        served = node_models()
        unknown = sorted(set(nodes) - set(served))
        if unknown:
            raise ApplicationError(
                "Unknown node(s): " + ", ".join(unknown) + ".",
                errors={"nodes": [f"Not in the inventory: {', '.join(unknown)}."]},
            )
    if run is not None:
        targets = under_observed_targets(run)
        if nodes is not None:
            targets = [t for t in targets if t["node"] in set(nodes)]
        if not targets:
            raise ApplicationError(
                f"Calibration run {run.pk}'s report names no under-observed node"
                + (" among those named" if nodes is not None else "")
                + ": nothing to probe.",
                errors={
                    "calibration_run": [
                        "No profile on an inventory node is insufficient_data or "
                        "not_identifiable, nor holds a value a probe can pin "
                        "(prefill_tokens_per_s, decode_step_ms)."
                    ]
                },
            )
        return targets
    assert nodes is not None
    return [{"node": n, "model": m} for n in dict.fromkeys(nodes) for m in served[n]]


def probe_create(
    *,
    actor: Identity,
    reason: str,
    calibration_run: int | None = None,
    nodes: list[str] | None = None,
    share: float = DEFAULT_SHARE,
    max_requests: int,
    hours: float,
    min_observations: int,
) -> ExplorationProbe:
    """Propose a probe from a calibration run's under-observed profiles and held values and/or
    named nodes (at least one of the two); it sends nothing until approved and started."""
    if calibration_run is None and nodes is None:
        raise ApplicationError(
            "Name a calibration run or nodes to probe.",
            errors={"calibration_run": ["Give calibration_run, nodes, or both."]},
        )
    if not 0 < share <= MAX_SHARE:  # the serializer checks it too; a service stands alone
        raise ApplicationError(
            f"A probe's share is in (0, {MAX_SHARE}].", errors={"share": ["Out of range."]}
        )
    run = None
    if calibration_run is not None:
        run = CalibrationRun.objects.filter(pk=calibration_run).first()
        if run is None or run.status != RunStatus.SUCCEEDED:
            raise ApplicationError(
                f"Calibration run {calibration_run} is gone or did not succeed.",
                errors={"calibration_run": ["Name a succeeded calibration run."]},
            )
    targets = _targets(run, nodes)
    with transaction.atomic():
        probe = ExplorationProbe.objects.create(
            calibration_run=run,
            targets=targets,
            share=share,
            max_requests=max_requests,
            duration_s=hours * 3600.0,
            min_observations=min_observations,
            reason=reason,
            created_by_name=actor.name,
            created_by_user_id=actor.user_id,
            created_by_key_id=actor.key_id,
            created_by_person_id=actor.person_id,
        )
        _audit(probe, "propose", "", actor, reason)
    return probe


def _check_people(probe: ExplorationProbe, action: str, actor: Identity) -> None:
    """The module docstring's four-eyes rules."""
    if action == "abort" or actor.is_system:
        return
    if not actor.has_person:
        raise ApplicationError(
            f"{actor} belongs to no person, so it may not {action} a probe; use a key owned "
            "by a person (create_api_key --owner) or sign in.",
            status_code=403,
        )
    if action == "approve":
        same = (
            (actor.user_id is not None and actor.user_id == probe.created_by_user_id)
            or (actor.key_id is not None and actor.key_id == probe.created_by_key_id)
            or actor.name == probe.created_by_name
            or (actor.person_id is not None and actor.person_id == probe.created_by_person_id)
        )
        if same:
            raise ApplicationError(
                "Four-eyes rule: a probe must be approved by a person other than the one who "
                f"proposed it ({probe.created_by_name}); their own API keys count as them.",
                status_code=403,
            )
    elif (
        action == "start"
        and probe.created_by_person_id is None
        and actor.person_id == probe.approved_by_person_id
    ):
        raise ApplicationError(
            f"Four-eyes rule: probe {probe.pk} was proposed by {probe.created_by_name}, not by "
            f"a person, and approved by {probe.approved_by_name}; another person must start it.",
            status_code=403,
        )


def probe_step(
    *, probe: ExplorationProbe, action: str, actor: Identity, reason: str
) -> ExplorationProbe:
    """Approve, start or abort a probe (audited, announced). 409 when the probe is not in a
    state the step starts from, or when another probe runs; 403 under the four-eyes rules."""
    sources, target = STEPS[action]
    try:
        with transaction.atomic():
            probe = ExplorationProbe.objects.select_for_update().get(pk=probe.pk)
            if probe.state not in sources:
                raise ApplicationError(
                    f"Probe {probe.pk} is {probe.state}; it cannot {action}.", status_code=409
                )
            _check_people(probe, action, actor)
            before = probe.state
            now = timezone.now()
            probe.state = target
            if action == "approve":
                probe.approved_by_name = actor.name
                probe.approved_by_person_id = actor.person_id
            elif action == "start":
                if ExplorationProbe.objects.filter(state=ProbeState.RUNNING).exists():
                    raise ApplicationError(
                        "Another probe runs; abort it or let it complete first.", status_code=409
                    )
                probe.started_by_name = actor.name
                probe.started_at = now
                probe.ends_at = now + timedelta(seconds=probe.duration_s)
            else:
                probe.finished_at = now
                probe.outcome = f"aborted by {actor.name}: {reason}"[:300]
                probe.sent = probe_sent(probe)
            probe.save()
            _audit(probe, action, before, actor, reason)
    except IntegrityError as exc:  # another start won the race (one_running_probe)
        raise ApplicationError(
            "Another probe runs; abort it or let it complete first.", status_code=409
        ) from exc
    return probe


def probe_check() -> str:
    """End the running probe by itself when it has sent its budget, its deadline passed, or
    every target has `min_observations` measured requests since it started; record how many
    it sent. Beat runs it (`twin-probe-check`); what it did, for the log."""
    probe = ExplorationProbe.objects.filter(state=ProbeState.RUNNING).first()
    if probe is None:
        return "no probe running"
    sent = probe_sent(probe)
    observed = target_observations(probe)
    why = ""
    if sent >= probe.max_requests:
        why = f"sent its budget of {probe.max_requests} requests"
    elif probe.ends_at is not None and timezone.now() >= probe.ends_at:
        why = f"its deadline passed after {sent} requests"
    elif observed and min(observed.values()) >= probe.min_observations:
        why = f"every target has {probe.min_observations} observations ({sent} requests sent)"
    if not why:
        ExplorationProbe.objects.filter(pk=probe.pk).update(sent=sent)
        return f"probe {probe.pk} running: {sent} of {probe.max_requests} sent"
    with transaction.atomic():
        locked = ExplorationProbe.objects.select_for_update().get(pk=probe.pk)
        if locked.state != ProbeState.RUNNING:
            return f"probe {probe.pk} is {locked.state}"
        locked.state = ProbeState.COMPLETED
        locked.finished_at = timezone.now()
        locked.outcome = why
        locked.sent = sent
        locked.save()
        _audit(locked, "complete", ProbeState.RUNNING, SYSTEM, why)
    return f"probe {probe.pk} completed: {why}"


def _audit(probe: ExplorationProbe, action: str, before: str, actor: Identity, why: str) -> None:
    ProbeTransition.objects.create(
        probe=probe,
        action=action,
        from_state=before,
        to_state=probe.state,
        actor=actor.name,
        reason=why,
    )
    send_event(  # after commit (console/live/events.py)
        "probe.transition",
        {
            "probe_id": probe.pk,
            "action": action,
            "from_state": before,
            "to_state": probe.state,
            "actor": actor.name,
            "reason": why[:300],
        },
    )
