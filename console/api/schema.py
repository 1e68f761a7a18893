"""The OpenAPI schema's shared error responses (a drf-spectacular postprocessing hook).

Every operation may answer with the API's one error shape (console/api/errors.py): rather
than a copy per view, the hook adds the error statuses below to each operation that does not
document them itself, all pointing at one `Error` component. 413 only where there is a
body to be too large. docs/hardening.md lists what each status means here.
"""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What went wrong, for a person."},
        "errors": {
            "type": "object",
            "description": "Field errors (400): messages under each field's path.",
            "additionalProperties": True,
        },
    },
    "required": ["message"],
    "additionalProperties": True,
}
ERROR_RESPONSES = {
    "400": "Invalid input: field errors under `errors` (a NUL character, a value out of range, "
    "malformed JSON).",
    "401": "No valid credentials.",
    "403": "The caller's role may not do this.",
    "404": "No such object.",
    "405": "The route does not offer this method.",
    "409": "A conflict with the current state (a rule of the object's life cycle).",
    "415": "The body's content type is not accepted here.",
    "503": "Not available right now (credentials cannot be checked, no node may serve, a "
    "dependency is down); retry.",
}
BODY_ERROR_RESPONSES = {"413": "The body is too large (or decompresses to too much)."}


def add_error_responses(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Add the shared error responses to every operation (POSTPROCESSING_HOOKS)."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"$ref": "#/components/schemas/Error"}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            statuses = dict(ERROR_RESPONSES)
            if "requestBody" in operation:
                statuses |= BODY_ERROR_RESPONSES
            for status, description in statuses.items():
                operation["responses"].setdefault(
                    status,
                    {
                        "description": description,
                        "content": {"application/json": {"schema": reference}},
                    },
                )
    return result
