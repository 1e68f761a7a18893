"""Calibration runs over recorded traffic, the proposals they make, and the audit of them."""

from __future__ import annotations

from django.db import models

from console.twin.choices import ProbeState, ProposalState, RunStatus

_WHO = "Who did it: a username, `key:NAME` for an API key, or 'system' for automation."


class CalibrationRun(models.Model):
    """One calibration of the inventory's fleet against the traffic recorded in a window.

    A worker exports the window's decision records and outcomes as observations, fits the
    profiles (`optimizer.calibration`) and keeps the report and the calibrated fleet. A run
    that succeeds holds a proposal (`proposal`): the fitted profile values and link bandwidths,
    which an operator applies to the inventory or discards. `nominal_topology` is the
    inventory as the run saw it, so a proposal is never applied over values that changed
    since.
    """

    since = models.DateTimeField()
    until = models.DateTimeField()
    min_samples = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    progress = models.FloatField(default=0.0)
    message = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    observations = models.PositiveIntegerField(default=0)
    report = models.JSONField(default=dict, blank=True)
    nominal_topology = models.TextField(blank=True)
    calibrated_topology = models.TextField(blank=True)
    proposal = models.CharField(max_length=16, choices=ProposalState.choices, blank=True)
    requested_by_name = models.CharField(max_length=150, help_text=_WHO)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"calibration {self.pk} ({self.status})"


class ProposalDecision(models.Model):
    """The audit entry of applying or discarding a run's proposal: who, when, why, whether it
    overrode a 'no improvement' verdict, and the values it changed (empty when discarded):
    profile values (`model`, `accelerator`, `field`, ...) and link bandwidths (`a`, `b`,
    `field`: `bandwidth_gbps`, ...)."""

    run = models.ForeignKey(CalibrationRun, on_delete=models.CASCADE, related_name="decisions")
    action = models.CharField(max_length=16, choices=ProposalState.choices)
    actor = models.CharField(max_length=150, help_text=_WHO)
    reason = models.CharField(max_length=1000)
    override = models.BooleanField(
        default=False,
        help_text="Applied over the verdict 'no_improvement': the proposal did not improve the "
        "held-out errors, and the actor chose to apply it anyway (docs/twin.md).",
    )
    changes = models.JSONField(default=list, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} calibration {self.run_id} by {self.actor}"


class ExplorationProbe(models.Model):
    """A bounded share of live decisions sent to nodes the twin has too few observations of,
    so the next calibration can see them (issue #26; docs/twin.md, "Exploration probe").

    `targets` are the (node, model) pairs it may send to: from a calibration run's report
    (the profiles it could not fit: `insufficient_data` or `not_identifiable`), or named.
    It runs under a canary's rules: an admin proposes it, another person approves it, an
    admin starts it, and anyone with the role aborts it at any time. It completes by itself
    once it sent `max_requests` decisions, its deadline passed, or every target has
    `min_observations` measured requests since it started (`probe_check`).
    """

    calibration_run = models.ForeignKey(
        CalibrationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="probes"
    )
    targets = models.JSONField(default=list, help_text="[{node, model}] it may send to.")
    share = models.FloatField(help_text="The share of decisions it takes, in (0, 0.05].")
    max_requests = models.PositiveIntegerField()
    duration_s = models.FloatField(help_text="How long it may run once started.")
    min_observations = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=ProbeState.choices, default=ProbeState.PROPOSED)
    reason = models.CharField(max_length=1000)
    created_by_name = models.CharField(max_length=150, help_text=_WHO)
    created_by_user_id = models.IntegerField(null=True, blank=True)
    created_by_key_id = models.IntegerField(null=True, blank=True)
    created_by_person_id = models.IntegerField(null=True, blank=True)
    approved_by_name = models.CharField(max_length=150, blank=True)
    approved_by_person_id = models.IntegerField(null=True, blank=True)
    started_by_name = models.CharField(max_length=150, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ends_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=300, blank=True, help_text="Why it ended.")
    sent = models.PositiveIntegerField(
        default=0, help_text="Decisions it sent, as last counted (`probe_check`)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One probe at a time: the engine's snapshot carries one.
            models.UniqueConstraint(
                fields=["state"],
                condition=models.Q(state="running"),
                name="one_running_probe",
            )
        ]

    def __str__(self) -> str:
        return f"probe {self.pk} ({self.state})"


class ProbeTransition(models.Model):
    """The audit entry of one step of a probe: who, when, from which state, why."""

    probe = models.ForeignKey(
        ExplorationProbe, on_delete=models.CASCADE, related_name="transitions"
    )
    action = models.CharField(max_length=16)
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16)
    actor = models.CharField(max_length=150, help_text=_WHO)
    reason = models.CharField(max_length=1000)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.action} probe {self.probe_id} by {self.actor}"
