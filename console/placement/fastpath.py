"""The decision hot path served straight from the ASGI event loop.

`POST /api/v1/placements` and `POST /api/v1/placements:batch` from a service whose API key is
already in the in-memory key ring are answered here, without a thread hop: a decision is
about half a millisecond of CPU with no I/O (GUIDE rule 2), so running it on the loop is
cheaper than handing it to a worker thread and back, which costs more than the decision
(measured: the same endpoint through the thread pool reached a fraction of the throughput).
The body parsing, the engine call and the answers are the DRF views' own
(`api/handlers.py`), and errors use the API's one error shape.

Everything else goes to `fallback` (Django): sessions, unknown or cold keys, roles without
the right, and the first request before the engine holds a snapshot. So authentication,
access rules and error shapes stay defined once, in Django; this path only serves requests
Django would have served with 200, 400 or 503.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from rest_framework.exceptions import ValidationError

from console.access.keyring import digest_of, keyring
from console.access.permissions import SERVICE_CALLERS
from console.api.errors import error_body, validation_error_body
from console.placement.api import handlers
from console.placement.engine.runtime import runtime

logger = logging.getLogger(__name__)
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

ROUTES: dict[str, Callable[[Any], tuple[int, dict[str, Any]]]] = {
    "/api/v1/placements": handlers.decide_one,
    "/api/v1/placements:batch": handlers.decide_batch,
}
MAX_BODY_BYTES = 16 * 1024 * 1024  # a full batch of long prefix lists fits comfortably


def _bearer_key(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token else None
    return None


class DecisionFastPath:
    """ASGI middleware: serve hot decisions on the loop, pass everything else on."""

    def __init__(self, fallback: App) -> None:
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = ROUTES.get(scope.get("path", "")) if scope["type"] == "http" else None
        if handler is None or scope.get("method") != "POST" or not self._servable(scope):
            await self.fallback(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await _reply(send, 413, error_body("The request body is too large."))
                return
            if not message.get("more_body"):
                break
        try:
            data = json.loads(body)
        except ValueError as exc:
            await _reply(send, 400, error_body(f"JSON parse error - {exc}"))
            return
        try:
            status, payload = handler(data)
        except ValidationError as exc:
            status, payload = 400, validation_error_body(exc.detail)
        await _reply(send, status, payload)

    @staticmethod
    def _servable(scope: Scope) -> bool:
        """A cached service key with the right role, and an engine ready to decide."""
        token = _bearer_key(scope)
        if token is None:
            return False
        entry = keyring.cached(digest_of(token))
        return (
            entry is not None
            and entry.role in SERVICE_CALLERS
            and runtime().engine.snapshot is not None
        )


async def _reply(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
