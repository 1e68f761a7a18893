"""Who may hear `/ws/live/`: the production ASGI app, a real session cookie, and Channels'
WebsocketCommunicator. The stream carries what viewers may read, so it answers like REST:
no session closes with 4401 (REST 401), a session without a role with 4403 (REST 403)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client

from console.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


def _cookie(role: str | None) -> bytes:
    user = User.objects.create_user(f"user-{role}", password="pw-12345")
    if role is not None:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


async def _connect(cookie: bytes | None) -> tuple[bool, Any]:
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    if cookie is not None:
        headers.append((b"cookie", cookie))
    communicator = WebsocketCommunicator(application, "/ws/live/", headers=headers)
    connected, code = await communicator.connect(timeout=5)
    hello = await communicator.receive_json_from(timeout=5) if connected else None
    await communicator.disconnect()
    return connected, hello if connected else code


def _try(role: str | None, *, signed_in: bool = True) -> tuple[bool, Any]:
    cookie = _cookie(role) if signed_in else None
    return async_to_sync(_connect)(cookie)


def test_a_signed_in_user_without_a_role_is_refused_like_rest_403() -> None:
    assert _try(None) == (False, 4403)
    client = Client()
    client.force_login(User.objects.get(username="user-None"))
    assert client.get("/api/v1/nodes").status_code == 403  # what REST answers them


def test_a_session_with_only_the_service_role_hears_nothing() -> None:
    assert _try("service") == (False, 4403)


def test_no_session_is_refused_like_rest_401() -> None:
    assert _try(None, signed_in=False) == (False, 4401)


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
def test_every_reading_role_hears_the_stream(role: str) -> None:
    connected, hello = _try(role)
    assert connected and hello == {"type": "hello", "user": f"user-{role}"}
