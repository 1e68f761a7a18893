"""`/ws/live/`: session-authenticated websocket carrying live events as JSON."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from console.access.choices import Role
from console.access.roles import roles_of
from console.live.events import LIVE_GROUP

# Close codes in the 4000s are the application's (RFC 6455 §7.4.2); these mirror HTTP's 401
# and 403, as REST answers the same callers.
NOT_SIGNED_IN = 4401
NO_ROLE = 4403


class LiveConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=NOT_SIGNED_IN)
            return
        # The stream carries what viewers may read (REST's VIEWERS rule); a user without a
        # role, or with only the service role, reads nothing.
        if Role.VIEWER not in await database_sync_to_async(roles_of)(user):
            await self.close(code=NO_ROLE)
            return
        await self.channel_layer.group_add(LIVE_GROUP, self.channel_name)
        await self.accept()
        await self.send_json({"type": "hello", "user": user.get_username()})

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(LIVE_GROUP, self.channel_name)

    async def live_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])
