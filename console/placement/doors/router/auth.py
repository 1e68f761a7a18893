"""Who may call the router: a Locus API key with a service role, sent as the OpenAI API key
(`Authorization: Bearer <key>`, what every OpenAI client sends), or anyone when
`LOCUS_ROUTER_OPEN` is set (a trusted network; docs/router.md, "Authentication").

Keys come from the console's key ring (console/access/keyring.py), the REST API's: a key in
memory is checked on the loop; a miss looks the one key up in the database in a worker thread,
so the loop never waits on it.
"""

from __future__ import annotations

import asyncio

from django.conf import settings

from console.access.keyring import KeyEntry, KeyRingUnavailable, digest_of, keyring
from console.access.permissions import SERVICE_CALLERS
from console.dbutil import release_connections
from console.placement.doors.router.errors import RouterError


def _lookup(digest: str) -> KeyEntry | None:
    try:
        return keyring.lookup(digest)
    finally:
        release_connections()  # a worker thread's connection is not kept open


def bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


async def caller_of(authorization: str | None) -> str:
    """The caller's identity (`key:NAME`, as the REST API records it; empty when the router
    is open), or a RouterError: 401 without a valid key, 403 for a key whose role may not
    ask for decisions, 503 when the key cannot be checked."""
    if settings.LOCUS_ROUTER_OPEN:
        return ""
    token = bearer(authorization)
    if token is None:
        raise RouterError(
            401,
            "Send a Locus service key as the OpenAI API key (Authorization: Bearer <key>).",
            code="invalid_api_key",
        )
    digest = digest_of(token)
    entry = keyring.cached(digest)
    if entry is None:
        try:
            entry = await asyncio.get_running_loop().run_in_executor(None, _lookup, digest)
        except KeyRingUnavailable:
            raise RouterError(503, "The API key cannot be checked right now.") from None
    if entry is None:
        raise RouterError(401, "Incorrect API key provided.", code="invalid_api_key")
    if entry.role not in SERVICE_CALLERS:
        raise RouterError(
            403, f"The key's role ({entry.role}) may not ask for placements; use a service key."
        )
    return f"key:{entry.name}"
