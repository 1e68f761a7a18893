"""Reads of the access app for other apps."""

from __future__ import annotations

from console.access.models import ApiKey


def api_key_owner(key_id: int) -> int | None:
    """The id of the user who owns API key `key_id`; None for a key without an owner, or one
    that is gone."""
    owner: int | None = ApiKey.objects.filter(pk=key_id).values_list("owner_id", flat=True).first()
    return owner
