from django.db import models


class PolicyKind(models.TextChoices):
    HEURISTIC = "heuristic", "Built-in heuristic"
    LEARNED = "learned", "Trained scorer"


class PolicyState(models.TextChoices):
    CANDIDATE = "candidate", "Candidate"
    APPROVED = "approved", "Approved"
    SHADOW = "shadow", "Shadow"
    CANARY = "canary", "Canary"
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
