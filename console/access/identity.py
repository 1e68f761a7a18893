"""Who made a call, for audit trails and separation-of-duty rules.

Every authenticated caller has an identity: a signed-in user by their account, an API key
by the key (named `key:NAME`, as `ServicePrincipal.username`). `SYSTEM` stands only for the
console's own automatic actions (the canary watchdog, first-start bootstrap, the demo seed).

Behind every identity but the system stands at most one *person* (`person_id`, a user id):
a user is their own person, a key its owner's (`ApiKey.owner`). Four-eyes rules compare
people, so one person with a session and two keys is still one pair of eyes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console.access.authentication import ServicePrincipal

SYSTEM_NAME = "system"


@dataclass(frozen=True)
class Identity:
    name: str  # a username, `key:NAME`, or "system"
    user_id: int | None = None
    key_id: int | None = None
    person_id: int | None = None  # the user acting, or the key's owner; None: nobody

    @property
    def has_person(self) -> bool:
        return self.person_id is not None

    @property
    def is_system(self) -> bool:
        return self.user_id is None and self.key_id is None

    def __str__(self) -> str:
        return self.name


SYSTEM = Identity(SYSTEM_NAME)


def identity_of(principal: Any) -> Identity | None:
    """The identity of `request.user`: a user, an API key, or None when not authenticated."""
    if isinstance(principal, ServicePrincipal):
        key = principal.key
        return Identity(principal.username, key_id=key.id, person_id=key.owner_id)
    if principal is None or not getattr(principal, "is_authenticated", False):
        return None
    pk = getattr(principal, "pk", None)
    if pk is None:
        return None
    return Identity(principal.get_username(), user_id=int(pk), person_id=int(pk))
