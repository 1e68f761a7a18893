"""The decision hot path served straight from the ASGI event loop.

`POST /api/v1/placements` and `POST /api/v1/placements:batch` from a service whose API key is
already in the in-memory key ring are answered here, without a thread hop: a decision is
about 70 µs of CPU with no I/O (docs/architecture.md rule 2), so running it on the loop is cheaper
than handing it to a worker thread and back, which costs more than the decision (measured: the
same endpoint through the thread pool reached a seventh of the throughput).
The body parsing, the engine call and the answers are the DRF views' own
(`doors/handlers.py`), and errors use the API's one error shape.

Everything else goes to `fallback` (Django): sessions, unknown or cold keys, roles without
the right, hosts outside ALLOWED_HOSTS, bodies not declared `application/json`, and the first
request before the engine holds a snapshot. So authentication, access rules and error shapes
stay defined once, in Django; this path only serves requests Django would have served with
200, 400 or 503, with the headers Django's SecurityMiddleware would have added, and answers an
unexpected exception as Django's `handler500` does on the API's paths
(`console.api.errors.server_error`).

Batches of up to INLINE_BATCH_MAX requests (about 70 µs of CPU each) are decided on the loop
too. A larger batch runs in a worker thread: with the GIL that does not make it any cheaper,
but it lets the loop interleave other requests and websockets every switch interval instead
of stalling for the whole batch. With 100-request batches the thread hop and the GIL
hand-offs cost about a quarter of the throughput (tests/bench/bench_decisions.py, alternating
runs: 71-96 calls/s on the loop, 54-69 in a thread).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from functools import lru_cache
from typing import Any

import orjson
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from rest_framework.exceptions import ValidationError

from console.access.keyring import KeyEntry, digest_of, keyring
from console.access.permissions import SERVICE_CALLERS
from console.api import jsonbody
from console.api.errors import (
    INTERNAL_ERROR_MESSAGE,
    error_body,
    parse_error_body,
    validation_error_body,
)
from console.placement.doors import handlers
from console.placement.engine.runtime import runtime

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

Handler = Callable[[Any, str], tuple[int, dict[str, Any]]]
ROUTES: dict[str, Handler] = {
    "/api/v1/placements": handlers.decide_one,
    "/api/v1/placements:batch": handlers.decide_batch,
}
INLINE_BATCH_MAX = 100  # ~7 ms of engine work: longer batches go to a worker thread
# Django's own logger for unhandled request errors, so alerting on it covers this path too.
request_logger = logging.getLogger("django.request")


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return str(value.decode("latin-1"))
    return None


def _bearer_key(scope: Scope) -> str | None:
    value = _header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token else None


@lru_cache(maxsize=64)  # bounded: the Host header is the client's to choose
def _host_allowed(host: str) -> bool:
    """Django's own ALLOWED_HOSTS check (HttpRequest.get_host), memoised per Host header."""
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


@lru_cache(maxsize=1)  # settings do not change while serving; built once, not per answer
def _security_headers() -> tuple[tuple[bytes, bytes], ...]:
    """What SecurityMiddleware adds to a JSON response (HSTS only applies over HTTPS,
    which a TLS-terminating proxy in front handles)."""
    headers = []
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append((b"x-content-type-options", b"nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        headers.append((b"referrer-policy", str(settings.SECURE_REFERRER_POLICY).encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append(
            (b"cross-origin-opener-policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY.encode())
        )
    return tuple(headers)


class DecisionFastPath:
    """ASGI middleware: serve hot decisions on the loop, pass everything else on."""

    def __init__(self, fallback: App) -> None:
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = ROUTES.get(scope.get("path", "")) if scope["type"] == "http" else None
        key = self._servable(scope) if handler and scope.get("method") == "POST" else None
        if handler is None or key is None:
            await self.fallback(scope, receive, send)
            return
        caller = f"key:{key.name}"  # the identity DRF would give it (ServicePrincipal)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if size > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
                await _reply(send, 413, error_body("The request body is too large."))
                return
            if not message.get("more_body"):
                break
        try:
            data = jsonbody.loads(b"".join(chunks))
        except jsonbody.JsonBodyError as exc:  # not JSON, absurdly deep, or a NUL character
            body = (
                parse_error_body(exc.message)
                if "body" in exc.errors
                else validation_error_body(exc.errors)
            )
            await _reply(send, 400, body)
            return
        try:
            if _long_batch(data):
                status, payload = await asyncio.get_running_loop().run_in_executor(
                    None, handler, data, caller
                )
            else:
                status, payload = handler(data, caller)
        except ValidationError as exc:
            status, payload = 400, validation_error_body(exc.detail)
        except Exception:
            # What Django does for a view that raises (handler500), in the API's shape.
            request_logger.exception("Internal Server Error: %s", scope.get("path"))
            status, payload = 500, error_body(INTERNAL_ERROR_MESSAGE)
        await _reply(send, status, payload)

    @staticmethod
    def _servable(scope: Scope) -> KeyEntry | None:
        """The caller's key if it is cached with the right role, the host is allowed, and
        the engine is ready to decide; None sends the request to Django."""
        token = _bearer_key(scope)
        if token is None or not _host_allowed(_header(scope, b"host") or ""):
            return None
        media_type = (_header(scope, b"content-type") or "").partition(";")[0].strip().lower()
        if media_type != "application/json":
            return None  # Django answers what DRF's parsers make of it (415 for most)
        entry = keyring.cached(digest_of(token))
        if (
            entry is not None
            and entry.role in SERVICE_CALLERS
            and runtime().engine.snapshot is not None
        ):
            return entry
        return None


def _long_batch(data: Any) -> bool:
    requests = data.get("requests") if isinstance(data, dict) else None
    return isinstance(requests, list) and len(requests) > INLINE_BATCH_MAX


async def _reply(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = orjson.dumps(payload)  # compact, as json.dumps with separators, at a tenth the cost
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *_security_headers(),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
