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
