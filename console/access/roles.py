"""Which roles a caller holds."""

from __future__ import annotations

from typing import Any

from console.access.choices import IMPLIED_ROLES, Role


def roles_of(user: Any) -> frozenset[str]:
    """The roles of a user (through groups named after roles) or of an API-key principal.

    A superuser is an admin. Roles nest as IMPLIED_ROLES says.
    """
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    explicit = getattr(user, "locus_roles", None)
    if explicit is None:
        cached = getattr(user, "_locus_roles", None)
        if cached is not None:
            return cached
        names = set(user.groups.values_list("name", flat=True))
        if user.is_superuser:
            names.add(Role.ADMIN)
        explicit = {name for name in names if name in IMPLIED_ROLES}
        result = frozenset().union(*(IMPLIED_ROLES[name] for name in explicit))
        user._locus_roles = result
        return result
    return frozenset().union(*(IMPLIED_ROLES[name] for name in explicit))


def primary_role(user: Any) -> str | None:
    """The strongest role, for display."""
    roles = roles_of(user)
    for role in (Role.ADMIN, Role.OPERATOR, Role.VIEWER, Role.SERVICE):
        if role in roles:
            return role.value
    return None
