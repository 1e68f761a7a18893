"""The one permission every API route checks: the caller's roles against the view's rule.

A view declares `access`, a mapping from DRF action (or HTTP method for plain APIViews) to the
roles that may call it, any one of which suffices. A view without a rule for the action is a
programming error and refuses everyone, so a new route cannot be open by accident.

A method the route does not offer at all (`GET` on a POST-only action, `DELETE` on a
read-only resource) answers 405 to an authenticated caller, as DRF would after the
permission check; an anonymous caller still gets 401.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from rest_framework.exceptions import MethodNotAllowed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from console.access.choices import Role
from console.access.roles import roles_of

logger = logging.getLogger(__name__)

VIEWERS: frozenset[str] = frozenset({Role.VIEWER})
OPERATORS: frozenset[str] = frozenset({Role.OPERATOR})
ADMINS: frozenset[str] = frozenset({Role.ADMIN})
SERVICES: frozenset[str] = frozenset({Role.SERVICE})
# Operators and admins may also call service endpoints by hand (testing a decision in the
# console); viewers may not, since a decision writes a record.
SERVICE_CALLERS: frozenset[str] = frozenset({Role.SERVICE, Role.OPERATOR})

READ_ACTIONS = ("list", "retrieve", "GET", "HEAD", "OPTIONS")


def inventory_access(**extra: frozenset[str]) -> dict[str, frozenset[str]]:
    """Read for viewers, write for operators: the rule of every inventory resource."""
    rule = {action: VIEWERS for action in READ_ACTIONS}
    rule |= {a: OPERATORS for a in ("create", "update", "partial_update", "destroy")}
    return rule | extra


class RolePermission(BasePermission):
    message = "Your role does not allow this."

    def has_permission(self, request: Request, view: Any) -> bool:
        rule: Mapping[str, frozenset[str]] | None = getattr(view, "access", None)
        action: str = getattr(view, "action", None) or request.method or ""
        if action == "metadata" or request.method == "OPTIONS":
            action = "OPTIONS"
        authenticated = bool(request.user and request.user.is_authenticated)
        if authenticated and not _offers(view, request.method or ""):
            raise MethodNotAllowed(request.method or "")
        allowed = None if rule is None else rule.get(action)
        if allowed is None:
            logger.error("no access rule for %s.%s", type(view).__name__, action)
            return False
        if not authenticated:
            return False  # DRF turns this into 401 since no credentials were given
        return bool(roles_of(request.user) & allowed)


def _offers(view: Any, method: str) -> bool:
    """Whether the view handles `method` at all (DRF's own dispatch test: a viewset has a
    handler only for the methods its route maps to actions)."""
    name = method.lower()
    return name in getattr(view, "http_method_names", ()) and hasattr(view, name)
