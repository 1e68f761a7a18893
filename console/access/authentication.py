"""`Authorization: Bearer <api key>` for services (docs/contracts.md §4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from console.access.keyring import KeyEntry, KeyRingUnavailable, digest_of, keyring


class CredentialsUnavailable(exceptions.APIException):
    """The key could not be checked (the database is down): 503, not 401, since the key
    may well be valid; the caller should retry."""

    status_code = 503
    default_detail = "API keys cannot be checked right now; retry shortly."
    default_code = "credentials_unavailable"


@dataclass(frozen=True)
class ServicePrincipal:
    """The caller behind an API key; stands in for `request.user`."""

    key: KeyEntry
    locus_roles: frozenset[str] = field(default_factory=frozenset)
    is_authenticated: bool = True
    is_active: bool = True
    is_staff: bool = False
    is_superuser: bool = False
    is_anonymous: bool = False

    @property
    def username(self) -> str:
        return f"key:{self.key.name}"

    def __str__(self) -> str:
        return self.username


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() != self.keyword.lower():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        try:
            entry = keyring.lookup(digest_of(header[1].decode(errors="replace")))
        except KeyRingUnavailable as exc:
            raise CredentialsUnavailable() from exc
        if entry is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        return ServicePrincipal(key=entry, locus_roles=frozenset({entry.role})), entry

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """Documents the bearer key in the OpenAPI schema (drf-spectacular finds it by
    `target_class` once this module is imported, which the authentication setting does)."""

    target_class = ApiKeyAuthentication
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key: `Authorization: Bearer <key>` "
            "(`manage.py create_api_key` or POST /api/v1/api-keys).",
        }
