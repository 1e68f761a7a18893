"""Choices of the twin app."""

from django.db import models


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class ProposalState(models.TextChoices):
    """What became of a succeeded run's proposal."""

    PENDING = "pending"
    APPLIED = "applied"
    DISCARDED = "discarded"


class ProbeState(models.TextChoices):
    """An exploration probe's life (docs/twin.md, "Exploration probe"): proposed by one
    person, approved by another, started, then completed by itself or aborted."""

    PROPOSED = "proposed"
    APPROVED = "approved"
    RUNNING = "running"
    COMPLETED = "completed"
    ABORTED = "aborted"
