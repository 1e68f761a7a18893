"""The one way to put an event on the live stream: `send_event(type, data)`.

Called from services only. Inside a transaction the event leaves after commit (a rolled-back
change is never announced), and a dead channel layer (Redis down) loses the event, never the
request.

The channel layer is asynchronous and its callers are not. `async_to_sync` on a thread with no
event loop (the engine's recorder, a Celery task, a sync view) starts a thread and a fresh
event loop for every call (asgiref's AsyncToSync), about 0.4 ms of CPU an event, and
channels_redis opens a connection pool per loop. So one event loop on one daemon thread per
process sends every event, over connections it keeps; the caller waits for the send as before.
A sync view of the ASGI server is the exception: `async_to_sync` runs its send on the server's
own loop, where the in-memory layer's consumers wait (a send from another loop would not wake
them), at no extra cost.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Coroutine
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from console.live.schemas import validate_event
from console.outage import OutageLog

logger = logging.getLogger(__name__)
LIVE_GROUP = "live"
# Redis down loses every event: say so once per outage, not once per event.
outage = OutageLog("live stream (channel layer)", logger)
# A send that takes longer is given up (its event lost), so a hung layer cannot hold a caller.
SEND_TIMEOUT_S = 5.0


class _Sender:
    """The process's event loop for channel-layer sends, on its own daemon thread, made on
    first use and again in a forked child (a Celery pool process inherits the object, not the
    thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="locus-live-events", daemon=True
                ).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._running_loop())
        try:
            future.result(timeout=SEND_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise


_sender = _Sender()


def send_event(event_type: str, data: dict[str, Any]) -> None:
    message = validate_event(event_type, data)
    transaction.on_commit(lambda: _publish(message))


def _publish(message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        envelope = {"type": "live.event", "event": message}
        if _under_the_asgi_loop():
            async_to_sync(layer.group_send)(LIVE_GROUP, envelope)
        else:
            _sender.run(layer.group_send(LIVE_GROUP, envelope))
    except Exception:  # the stream is best-effort; the write it reports already happened
        outage.failed(f"{message.get('type')} event lost")
        return
    outage.recovered()


def _under_the_asgi_loop() -> bool:
    """True on a thread `sync_to_async` runs a sync view on: asgiref's own test for running
    `async_to_sync` on the main event loop (asgiref/sync.py, AsyncToSync.__call__)."""
    local = SyncToAsync.threadlocal
    return getattr(local, "main_event_loop_pid", None) == os.getpid() and (
        getattr(local, "main_event_loop", None) is not None
    )
