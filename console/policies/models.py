"""Policy versions and everything that happens to them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from console.policies.choices import JobStatus, PolicyKind, PolicyState

_USER = settings.AUTH_USER_MODEL
_KEY = "access.ApiKey"
_WHO = "Who did it: a username, `key:NAME` for an API key, or 'system' for automation."


class PolicyVersion(models.Model):
    """A placement policy that can serve decisions: a built-in heuristic or a trained scorer.

    Lifecycle: candidate → approved → shadow → canary → active → retired, with rollback at
    any time (see services). At most one version is in shadow, canary or active at once.
    """

    name = models.CharField(max_length=100)
    version = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=PolicyKind.choices)
    heuristic = models.CharField(
        max_length=50, blank=True, help_text="For heuristics: the built-in policy's name."
    )
    artifact_dir = models.CharField(
        max_length=500, blank=True, help_text="For trained scorers: the directory from train."
    )
    metadata = models.JSONField(default=dict, blank=True, help_text="policy.json of the artifact.")
    artifact_sha256 = models.CharField(
        max_length=64, blank=True, help_text="SHA-256 of scorer.pt when it was registered."
    )
    state = models.CharField(
        max_length=16, choices=PolicyState.choices, default=PolicyState.CANDIDATE
    )
    canary_share = models.FloatField(default=0.1)
    # Who registered and approved it: a user or an API key, and the name the audit trail
    # shows (kept if the account or key is deleted, so the four-eyes rule still holds).
    registered_by = models.ForeignKey(
        _USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    registered_by_key = models.ForeignKey(
        _KEY, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    registered_by_name = models.CharField(max_length=150, blank=True, help_text=_WHO)
    # The person behind the registrant (the user, or the key's owner); empty for the system
    # and keys without a person. Four eyes compares these (docs/operations.md).
    registered_by_person = models.ForeignKey(
        _USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    registered_at = models.DateTimeField(auto_now_add=True)
    approved_by = models.ForeignKey(
        _USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by_key = models.ForeignKey(
        _KEY, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by_name = models.CharField(max_length=150, blank=True, help_text=_WHO)
    approved_by_person = models.ForeignKey(
        _USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    state_changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-registered_at"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="policy_version_unique"),
            models.CheckConstraint(
                condition=Q(canary_share__gt=0, canary_share__lte=1),
                name="policy_canary_share_fraction",
            ),
            # The database itself guarantees one live version per rollout slot.
            *(
                models.UniqueConstraint(
                    fields=["state"], condition=Q(state=s), name=f"policy_single_{s}"
                )
                for s in (PolicyState.SHADOW, PolicyState.CANARY, PolicyState.ACTIVE)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def spec(self) -> str:
        """What `optimizer.decide.registry.load_policy` takes: a built-in name or a directory."""
        return self.heuristic if self.kind == PolicyKind.HEURISTIC else self.artifact_dir


class PolicyTransition(models.Model):
    """Audit trail: who moved a version between states, when, and why."""

    version = models.ForeignKey(PolicyVersion, on_delete=models.CASCADE, related_name="transitions")
    from_state = models.CharField(max_length=16)
    to_state = models.CharField(max_length=16)
    actor = models.CharField(max_length=150, help_text=_WHO)
    reason = models.CharField(max_length=1000, blank=True)
    canary_share = models.FloatField(
        null=True, blank=True, help_text="The traffic share a move into canary chose."
    )
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.version}: {self.from_state} → {self.to_state} by {self.actor}"


class PolicyEvaluation(models.Model):
    """A simulator evaluation of a version against the active policy and the heuristics,
    on the same arrivals, run by a worker. Approval requires a succeeded one."""

    version = models.ForeignKey(PolicyVersion, on_delete=models.CASCADE, related_name="evaluations")
    baseline = models.CharField(max_length=200, help_text="The active policy compared against.")
    trace = models.CharField(max_length=500)
    loads = models.JSONField(default=list)
    seeds = models.JSONField(default=list)
    # The twin (docs/twin.md): replay the last N hours of recorded traffic instead of `trace`,
    # and run on a calibration run's fitted fleet instead of the inventory's nominal one.
    recorded_hours = models.FloatField(null=True, blank=True)
    calibration_run = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = models.FloatField(default=0.0)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        _USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_by_key = models.ForeignKey(
        _KEY, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"evaluation of {self.version} ({self.status})"


class ShadowComparison(models.Model):
    """Running totals of a shadow version against the active policy on live requests."""

    version = models.OneToOneField(
        PolicyVersion, on_delete=models.CASCADE, related_name="shadow_stats"
    )
    compared = models.PositiveBigIntegerField(default=0)
    agreed = models.PositiveBigIntegerField(default=0)
    # Sum over requests of (shadow pick's estimated TTFT - active pick's), in ms: the
    # predicted difference had the shadow decided; negative means the shadow looks faster.
    predicted_ttft_delta_ms_sum = models.FloatField(default=0.0)
    predicted_cost_delta_usd_sum = models.FloatField(default=0.0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"shadow stats of {self.version}"


class TrainingRun(models.Model):
    """A PPO training run started from the console and executed by a worker.

    `metrics` is the learning curve: every named-metrics record `optimizer.rl.train` reported
    (baselines, validations, PPO statistics; docs/learned-policy.md). A run that validates
    below the best heuristic sets `below_baseline` and registers no version unless its config
    says `register_below_baseline`.
    """

    config = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = models.FloatField(default=0.0)
    log_tail = models.TextField(blank=True)
    metrics = models.JSONField(default=list, blank=True)
    below_baseline = models.BooleanField(default=False)
    artifact_dir = models.CharField(max_length=500, blank=True)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    version = models.ForeignKey(
        PolicyVersion,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="training_runs",
    )
    started_by = models.ForeignKey(
        _USER, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_by_key = models.ForeignKey(
        _KEY, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_by_name = models.CharField(max_length=150, blank=True, help_text=_WHO)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"training run {self.pk} ({self.status})"
