"""The router's limits: the request body's size (413 above LOCUS_ROUTER_MAX_BODY_BYTES, read
no further) and shedding (429 when every node that may serve the call is saturated)."""

from __future__ import annotations

from aiohttp import web
from django.conf import settings

from console.placement.doors.router.errors import RouterError
from console.placement.engine.inputs import DecisionInput
from console.placement.engine.runtime import Runtime


async def read_body(request: web.Request) -> bytes:
    """The whole body, refused with 413 as soon as it passes the limit (a declared
    Content-Length over it is refused before anything is read)."""
    limit = settings.LOCUS_ROUTER_MAX_BODY_BYTES
    too_large = RouterError(
        413,
        f"The request body is larger than the router's limit of {limit} bytes "
        "(LOCUS_ROUTER_MAX_BODY_BYTES).",
    )
    if request.content_length is not None and request.content_length > limit:
        raise too_large
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        # Never inflate a client's body here (a compression bomb would be ours to hold).
        raise RouterError(415, f"Send the body uncompressed, not {encoding!r}.")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def shed_if_saturated(rt: Runtime, body: DecisionInput) -> None:
    """429 when every node that may serve `body` (hard constraints applied) has at least
    LOCUS_ROUTER_SHED_QUEUE_DEPTH queued requests as the engine sees them (0: never shed);
    the ext_proc picker's rule (docs/gateway.md, "Shedding")."""
    limit = settings.LOCUS_ROUTER_SHED_QUEUE_DEPTH
    if limit <= 0:
        return
    queues = rt.engine.queues(body)
    if queues and min(queues.values()) >= limit:
        raise RouterError(
            429,
            "Every node that may serve this request is saturated; retry later.",
            code="overloaded",
            queue_depth=queues,
        )
