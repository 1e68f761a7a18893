"""The roles of docs/contracts.md §4."""

from django.db import models


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer (read everything)"
    OPERATOR = "operator", "Operator (edit inventory, drain nodes)"
    ADMIN = "admin", "Admin (approve and roll back policies, manage keys)"
    SERVICE = "service", "Service (decisions and telemetry only)"


# Human roles nest: an admin may do what an operator may, an operator what a viewer may.
# `service` stands apart: a machine identity that reads nothing it does not need.
IMPLIED_ROLES: dict[str, frozenset[str]] = {
    Role.VIEWER: frozenset({Role.VIEWER}),
    Role.OPERATOR: frozenset({Role.VIEWER, Role.OPERATOR}),
    Role.ADMIN: frozenset({Role.VIEWER, Role.OPERATOR, Role.ADMIN}),
    Role.SERVICE: frozenset({Role.SERVICE}),
}
