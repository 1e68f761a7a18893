"""The one way to put an event on the live stream: `send_event(type, data)`.

Called from services only. Inside a transaction the event leaves after commit (a rolled-back
change is never announced); the channel layer is asked without waiting on the caller's
thread, and a dead channel layer (Redis down) loses the event, never the request.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from console.live.schemas import validate_event
from console.outage import OutageLog

logger = logging.getLogger(__name__)
LIVE_GROUP = "live"
# Redis down loses every event: say so once per outage, not once per event.
outage = OutageLog("live stream (channel layer)", logger)


def send_event(event_type: str, data: dict[str, Any]) -> None:
    message = validate_event(event_type, data)
    transaction.on_commit(lambda: _publish(message))


def _publish(message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(LIVE_GROUP, {"type": "live.event", "event": message})
    except Exception:  # the stream is best-effort; the write it reports already happened
        outage.failed(f"{message.get('type')} event lost")
        return
    outage.recovered()
