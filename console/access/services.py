"""Writes for access control: issuing and revoking API keys."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from console.access.choices import Role
from console.access.keyring import digest_of, keyring
from console.access.models import ApiKey
from console.api.errors import ApplicationError

KEY_PREFIX = "lk"


@dataclass(frozen=True)
class IssuedKey:
    """A new key: `secret` is the only copy of the bearer token and is never stored."""

    api_key: ApiKey
    secret: str


def api_key_create(
    *, name: str, role: str, owner: User | None = None, created_by: User | None = None
) -> IssuedKey:
    """Issue a key acting for `owner` (the person behind it; None only from the CLI).

    `created_by` is the signed-in user who made it, if a user did (a key made with another
    key has none, but inherits that key's owner)."""
    if role not in Role.values:
        raise ApplicationError(
            f"Unknown role {role!r}.", errors={"role": [f"Choose one of {', '.join(Role.values)}."]}
        )
    if not name.strip():
        raise ApplicationError("A key needs a name.", errors={"name": ["This field is required."]})
    if ApiKey.objects.filter(name=name).exists():
        raise ApplicationError(
            f"An API key named {name!r} already exists.",
            status_code=409,
            errors={"name": ["An API key with this name already exists."]},
        )
    prefix = secrets.token_hex(4)
    secret = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        name=name,
        role=role,
        prefix=prefix,
        digest=digest_of(secret),
        created_by=created_by,
        owner=owner,
    )
    return IssuedKey(api_key=api_key, secret=secret)


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
        transaction.on_commit(keyring.invalidate)
    return api_key
