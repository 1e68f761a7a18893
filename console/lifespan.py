"""The ASGI lifespan protocol for the console: on shutdown, write what is still queued.

uvicorn (the Procfile's and the image's server) sends `lifespan.shutdown` on SIGTERM or
SIGINT once in-flight requests have finished (uvicorn's `Server.shutdown`; ASGI lifespan spec:
https://asgi.readthedocs.io/en/latest/specs/lifespan.html). Channels' ProtocolTypeRouter
handles no lifespan scope, so without this the process exited with the decision recorder's
queue unwritten: every record and outcome of the last flush interval was lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from console.placement.engine.runtime import current_runtime

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

# Below the 10 s a `docker stop` waits before SIGKILL; draining takes well under a second.
SHUTDOWN_TIMEOUT_S = 8.0
logger = logging.getLogger(__name__)


def drain_recorder() -> None:
    """Stop this process's decision recorder once it has written its queue (nothing to do
    when no request ever started the engine)."""
    serving = current_runtime()
    if serving is not None:
        serving.recorder.stop(timeout=SHUTDOWN_TIMEOUT_S)


class Lifespan:
    """ASGI middleware answering the lifespan scope; everything else goes to `app`."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                try:
                    await asyncio.get_running_loop().run_in_executor(None, drain_recorder)
                except Exception:
                    logger.exception("draining the decision recorder failed")
                await send({"type": "lifespan.shutdown.complete"})
                return
