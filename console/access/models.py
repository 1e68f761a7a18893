"""API keys: how services authenticate."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from console.access.choices import Role


class ApiKey(models.Model):
    """A bearer credential for a service or script, with one role, belonging to a person.

    `owner` is the person the key acts for: the user who made it, or for a key made with
    another key, that key's owner. Four-eyes rules compare people, so a person's keys and
    their session count as one (docs/operations.md "Four eyes"). Only `create_api_key`
    without `--owner` makes a key without a person; such a key may not approve or promote.

    Only a SHA-256 digest of the secret is stored; the key itself is shown once at creation.
    Keys are random 256-bit strings, so a fast digest is safe here (no password stretching
    is needed against guessing, unlike for human passwords).
    """

    name = models.CharField(max_length=100, unique=True)
    role = models.CharField(max_length=16, choices=Role.choices)
    prefix = models.CharField(max_length=16, unique=True, help_text="Public id inside the key.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # A person's keys die with the person: a key outliving its owner would act for nobody.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="api_keys",
        help_text="The person this key acts for; empty only for keys made by the CLI.",
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
