"""The live stream's `decision` events say when a decision was split (issue #30) or answered
by an exploration probe (issue #26): decisions made through `POST /api/v1/placements`, heard
on `/ws/live/` by a viewer over the production ASGI app (docs/dashboard.md, "Live decisions").

The recorder publishes from `flush`; the test flushes it on a `sync_to_async` thread, as a
sync view runs, so the in-memory channel layer's send runs on the loop the consumer waits on
(console/live/events.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client

from console.asgi import application
from console.placement.engine.runtime import runtime
from tests.console.placement.conftest import engine_settings
from tests.console.placement.doors.probe_doors import (
    PROBE_NODE,
    install_probe_fleet,
    sessions,
    start_probe,
)
from tests.console.placement.pd_fleet import SPLIT_BODY, install
from tests.console.twin.probe_fleet import SHORT, idle

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["engine_settings"]  # the placement tests' fresh engine, as tests/console/twin uses it


def _viewer_cookie() -> bytes:
    user = User.objects.create_user("live-viewer", password="pw-12345")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


def _hear_decisions(place: Callable[[], list[str]]) -> dict[str, dict[str, Any]]:
    """Connect as a viewer, run `place` (it makes decisions and answers their ids), flush the
    recorder; the `decision` events heard, by decision id."""

    def place_and_flush() -> list[str]:
        ids = place()
        runtime().recorder.flush()
        return ids

    async def listen() -> dict[str, dict[str, Any]]:
        headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
        headers.append((b"cookie", await sync_to_async(_viewer_cookie)()))
        communicator = WebsocketCommunicator(application, "/ws/live/", headers=headers)
        connected, _ = await communicator.connect(timeout=5)
        assert connected
        assert (await communicator.receive_json_from(timeout=5))["type"] == "hello"
        ids = await sync_to_async(place_and_flush)()
        heard: dict[str, dict[str, Any]] = {}
        while set(ids) - set(heard):
            event = await communicator.receive_json_from(timeout=5)
            if event["type"] == "decision":
                heard[event["decision_id"]] = event
        await communicator.disconnect()
        return {i: heard[i] for i in ids}

    return async_to_sync(listen)()


def _place(client_for: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = client_for("service").post("/api/v1/placements", body, format="json")
    assert response.status_code == 200, response.content
    answer: dict[str, Any] = response.json()
    return answer


def test_a_split_decision_event_names_its_prefill_node_and_an_unsplit_one_null(
    engine_settings: Any, client_for: Any
) -> None:
    install()
    answers: list[dict[str, Any]] = []

    def place() -> list[str]:
        answers.append(_place(client_for, SPLIT_BODY))
        answers.append(_place(client_for, {**SPLIT_BODY, "prompt_tokens": 500}))
        return [a["decision_id"] for a in answers]

    heard = _hear_decisions(place)
    split, whole = (heard[a["decision_id"]] for a in answers)
    assert (split["node"], split["prefill_node"]) == ("core-d", "core-p")
    assert split["probe"] is None
    assert whole["node"] == "edge-m"
    assert whole["prefill_node"] is None and whole["probe"] is None


def test_a_probed_decision_event_carries_the_probe_id_and_the_policys_null(
    engine_settings: Any, client_for: Any
) -> None:
    rt = install_probe_fleet()
    probe_id = start_probe(client_for)
    answers: list[dict[str, Any]] = []

    def place() -> list[str]:
        (taken,), (left,) = sessions(probed=True, count=1), sessions(probed=False, count=1)
        for session in (taken, left):
            idle(rt)
            answers.append(_place(client_for, {**SHORT, "session_id": session}))
        return [a["decision_id"] for a in answers]

    heard = _hear_decisions(place)
    probed, policys = (heard[a["decision_id"]] for a in answers)
    assert answers[0]["probe"]["id"] == probe_id  # the REST answer's note, for the same id
    assert (probed["node"], probed["probe"]) == (PROBE_NODE, probe_id)
    assert probed["prefill_node"] is None
    assert policys["probe"] is None and policys["node"] != PROBE_NODE
