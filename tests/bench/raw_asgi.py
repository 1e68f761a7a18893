"""The physical limit of `bench_decisions.py`: a raw ASGI application answering every request
with a constant JSON body, served by the same uvicorn under the same load. Benchmarks only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

BODY = b'{"decision_id":"0","node":"n","site":"s","fallbacks":[],"policy":{"name":"p"}}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def application(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})
