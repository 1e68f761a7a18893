"""How the OpenAPI schema documents API keys: an HTTP bearer scheme (drf-spectacular's
authentication extensions, "Customization: OpenApiAuthenticationExtension")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "console.access.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key: `Authorization: Bearer <key>` (shown once on creation).",
        }
