"""Keep one auth group per role, so admins grant roles to users in the console."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.db.models.signals import post_migrate
from django.dispatch import receiver

from console.access.choices import Role


@receiver(post_migrate)
def ensure_role_groups(sender: Any, **kwargs: Any) -> None:
    if getattr(sender, "label", None) != "access":
        return
    for role in Role:
        Group.objects.get_or_create(name=role.value)
