"""Every inventory write bumps FleetSettings.revision, one counter in the database that every
process can read cheaply to know whether its cached view of the inventory is still current
(the decision engine rebuilds its topology only when it moved)."""

from __future__ import annotations

from typing import Any

from django.db.models import F
from django.db.models.signals import m2m_changed, post_delete, post_save

from console.inventory import models as inventory

WATCHED = (
    inventory.Site,
    inventory.Link,
    inventory.Accelerator,
    inventory.ServedModel,
    inventory.Profile,
    inventory.Node,
    inventory.Slo,
    inventory.Source,
    inventory.WorkloadShare,
)


def inventory_revision() -> int:
    row = inventory.FleetSettings.objects.filter(pk=1).values_list("revision", flat=True).first()
    return int(row or 0)


def bump_revision(**kwargs: Any) -> None:
    if kwargs.get("raw"):
        return  # loading fixtures
    updated = inventory.FleetSettings.objects.filter(pk=1).update(revision=F("revision") + 1)
    if not updated:
        inventory.FleetSettings.objects.get_or_create(pk=1, defaults={"revision": 1})


def connect() -> None:
    for model in (*WATCHED, inventory.FleetSettings):
        post_save.connect(bump_revision, sender=model, dispatch_uid=f"rev-save-{model.__name__}")
        post_delete.connect(
            bump_revision, sender=model, dispatch_uid=f"rev-delete-{model.__name__}"
        )
    m2m_changed.connect(
        bump_revision, sender=inventory.Node.served_models.through, dispatch_uid="rev-node-models"
    )
