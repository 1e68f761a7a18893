"""Decision records: what was decided, by which policy, and what happened."""

from __future__ import annotations

from django.db import models


class DecisionRecord(models.Model):
    """One placement decision, written in batches off the request thread.

    `arm` says which rollout arm served it (active or canary); `shadow_node` what the shadow
    policy would have picked. The outcome fields are filled when the caller reports back.
    `receipt` says why (`console.placement.engine.receipts`): the top candidates with their scores
    and estimates, and the rejected nodes counted by reason.
    `prefill_node` is the node that ran the prompt's prefill when the decision split the two
    phases (`node` decodes; issue #30), empty when `node` runs both.
    `prefix_hashes` are the ids of the prompt's 512-token blocks as the caller sent them (never
    prompt text): with the outcome they make the record an observation (docs/twin.md).
    """

    id = models.CharField(primary_key=True, max_length=32)
    created_at = models.DateTimeField(db_index=True)
    source = models.CharField(max_length=100, blank=True)
    source_site = models.CharField(max_length=100)
    model = models.CharField(max_length=200)
    slo = models.CharField(max_length=100, blank=True)
    prompt_tokens = models.PositiveIntegerField()
    max_output_tokens = models.PositiveIntegerField()
    session_id = models.CharField(max_length=200, blank=True)
    decided_by = models.CharField(
        max_length=150,
        blank=True,
        help_text="Who asked: `key:NAME` or a username. Only it may report the outcome.",
    )
    node = models.CharField(max_length=200, db_index=True)
    node_site = models.CharField(max_length=100)
    fallbacks = models.JSONField(default=list)
    prefill_node = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="The prefill node of a split decision (`node` decodes); empty when unsplit.",
    )
    prefix_hashes = models.JSONField(default=list, blank=True)
    policy_name = models.CharField(max_length=100)
    policy_version = models.CharField(max_length=100)
    arm = models.CharField(max_length=16, default="active")
    degraded = models.CharField(
        max_length=32, blank=True, help_text="Why the fallback heuristic decided, if it did."
    )
    shadow_policy = models.CharField(max_length=200, blank=True)
    shadow_node = models.CharField(max_length=200, blank=True)
    latency_us = models.FloatField()
    ttft_ms = models.FloatField(null=True, blank=True)
    e2e_ms = models.FloatField(null=True, blank=True)
    ok = models.BooleanField(null=True)
    slo_met = models.BooleanField(null=True)
    outcome_at = models.DateTimeField(null=True, blank=True)
    receipt = models.JSONField(default=dict, blank=True)
    probe = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The exploration probe that answered instead of the policy (docs/twin.md); "
        "null for the policy's own answers.",
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["policy_name", "policy_version", "created_at"]),
            # A probe's sent decisions, counted at every snapshot refresh: only probe
            # decisions are in it, so counting one probe's reads at most its budget of rows.
            models.Index(
                fields=["probe"], name="decision_probe", condition=models.Q(probe__isnull=False)
            ),
            # The decision search (selectors.decision_search) by node or SLO over a time
            # range, newest first: a range scan of the matching rows, not of every record.
            models.Index(fields=["node", "created_at"], name="decision_node_time"),
            models.Index(fields=["slo", "created_at"], name="decision_slo_time"),
            models.Index(fields=["model", "created_at"], name="decision_model_time"),
        ]

    def __str__(self) -> str:
        return f"{self.id} → {self.node}"


class BreakerEvent(models.Model):
    """A circuit breaker changing state (audit trail and cross-process sharing)."""

    node = models.CharField(max_length=200, db_index=True)
    from_state = models.CharField(max_length=16)
    to_state = models.CharField(max_length=16)
    reason = models.CharField(max_length=300)
    at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.node}: {self.from_state} → {self.to_state}"
