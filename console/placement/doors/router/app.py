"""The router's HTTP server: the OpenAI routes, `/v1/models`, `/health` and `/metrics`, on an
aiohttp application; `RouterServer` runs it on an event loop of its own thread (the command,
the tests), as the ext_proc picker's server does.

aiohttp's server runs with `handler_cancellation`: a client that goes away cancels its
handler, and with it the node's request (`handler.py`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client import multiprocess as prom_multiprocess

from console.placement.doors.loopserver import LoopServer, start_engine
from console.placement.doors.openai import CHAT_COMPLETIONS, COMPLETIONS
from console.placement.doors.router.auth import caller_of
from console.placement.doors.router.errors import RouterError
from console.placement.doors.router.forwarding import Upstream
from console.placement.doors.router.handler import STREAMING, CompletionHandler
from console.placement.doors.router.metrics import ROUTER_CALLS
from console.placement.engine.runtime import runtime

logger = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Connections queued before they are accepted (aiohttp's default is 128): a burst of clients
# must not see SYNs dropped and retried a second later.
BACKLOG = 1024


@web.middleware
async def openai_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error in OpenAI's shape (`errors.py`), a crash as a logged 500."""
    try:
        response = await handler(request)
    except RouterError as exc:
        ROUTER_CALLS.labels(status=f"{exc.status // 100}xx").inc()
        return exc.response()
    except web.HTTPException as exc:  # aiohttp's own: unknown path (404), wrong method (405)
        if exc.status < 400:
            raise
        ROUTER_CALLS.labels(status=f"{exc.status // 100}xx").inc()
        error = RouterError(exc.status, f"{request.method} {request.path}: {exc.reason}.")
        return error.response()
    except Exception as exc:
        if request.get(STREAMING):
            ROUTER_CALLS.labels(status="cut").inc()
            if isinstance(exc, ConnectionResetError):
                # The client went away mid-answer and a write found out before aiohttp cancelled
                # the handler: end as that cancellation does, not as a failure to log.
                raise asyncio.CancelledError from exc
            raise  # past the first byte: aiohttp cuts the connection
        logger.exception("router failed on %s", request.path)
        ROUTER_CALLS.labels(status="5xx").inc()
        return RouterError(500, "The router failed; it logged the cause.").response()
    ROUTER_CALLS.labels(status=f"{response.status // 100}xx").inc()
    return response


class Routes:
    """The non-completion routes."""

    def __init__(self) -> None:
        self.started = int(time.time())

    async def models(self, request: web.Request) -> web.Response:
        await caller_of(request.headers.get("authorization"))
        snap = runtime().engine.snapshot
        if snap is None:
            raise RouterError(503, "The router has no inventory snapshot yet; retry shortly.")
        data = [
            {"id": m.name, "object": "model", "created": self.started, "owned_by": "locus"}
            for m in snap.topology.models
        ]
        return web.json_response(
            {"object": "list", "data": data}, dumps=lambda o: orjson.dumps(o).decode()
        )

    async def health(self, request: web.Request) -> web.Response:
        """200 once the engine holds an inventory snapshot (ready to route), 503 before."""
        if runtime().engine.snapshot is None:
            return web.json_response({"status": "starting"}, status=503)
        return web.json_response({"status": "ok"})

    async def metrics(self, request: web.Request) -> web.Response:
        registry = REGISTRY
        if "PROMETHEUS_MULTIPROC_DIR" in os.environ:  # every process's series
            registry = CollectorRegistry()
            prom_multiprocess.MultiProcessCollector(registry)
        return web.Response(body=generate_latest(registry), content_type="text/plain")


def build_app(upstream: Upstream, source: str | None) -> web.Application:
    # The body limit is the router's own (limits.py reads it as it arrives), not aiohttp's.
    app = web.Application(middlewares=[openai_errors], client_max_size=2**63)
    completion = CompletionHandler(upstream, source)
    routes = Routes()
    app.router.add_post(COMPLETIONS, completion.handle)
    app.router.add_post(CHAT_COMPLETIONS, completion.handle)
    app.router.add_get("/v1/models", routes.models)
    app.router.add_get("/health", routes.health)
    app.router.add_get("/metrics", routes.metrics)
    return app


@dataclass
class RouterServer(LoopServer):
    """The router on a loop of its own thread; `start()` returns once it listens."""

    port: int
    source: str | None = None
    host: str = "127.0.0.1"
    bound_port: int = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.bound_port}"

    def start(self) -> RouterServer:
        threading.Thread(target=start_engine, name="locus-router-engine", daemon=True).start()
        self._launch("locus-router")
        return self

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        upstream = Upstream()
        runner = web.AppRunner(
            build_app(upstream, self.source), handler_cancellation=True, access_log=None
        )
        await runner.setup()
        try:
            # reuse_port: `--processes N` routers listen on one port (processes.py).
            site = web.TCPSite(runner, self.host, self.port, backlog=BACKLOG, reuse_port=True)
            await site.start()
            self.bound_port = int(runner.addresses[0][1])
            self._started.set()
            await self._stop.wait()
        finally:
            await runner.cleanup()
            await upstream.close()
