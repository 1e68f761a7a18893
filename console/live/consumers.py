"""`/ws/live/`: session-authenticated websocket carrying live events as JSON."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from console.live.events import LIVE_GROUP


class LiveConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        await self.channel_layer.group_add(LIVE_GROUP, self.channel_name)
        await self.accept()
        await self.send_json({"type": "hello", "user": user.get_username()})

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(LIVE_GROUP, self.channel_name)

    async def live_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])
