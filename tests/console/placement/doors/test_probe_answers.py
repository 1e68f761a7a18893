"""The JSON doors' answers name a running exploration probe on its decisions, and only there
(docs/twin.md, "Exploration probe"): `POST /api/v1/placements` and `:batch`, served by the
DRF views and by the ASGI fast path, carry the receipt's `probe` object."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from console.access.keyring import digest_of, keyring
from console.access.services import api_key_create
from console.placement.doors.fastpath import DecisionFastPath
from console.placement.engine.runtime import Runtime
from console.placement.models import DecisionRecord
from tests.console.placement.doors.probe_doors import (
    POLICY_NODES,
    PROBE_NODE,
    install_probe_fleet,
    sessions,
    start_probe,
)
from tests.console.twin.probe_fleet import SHORT, idle

pytestmark = pytest.mark.django_db


@pytest.fixture
def probing(db: Any, engine_settings: Any, client_for: Any) -> tuple[Runtime, int]:
    rt = install_probe_fleet()
    return rt, start_probe(client_for)


def _check_probed(rt: Runtime, answer: dict[str, Any], probe_id: int) -> None:
    """A probe's answer: the probe's node, the policy's pick first among the fallbacks, and
    the same note the receipt keeps."""
    note = answer["probe"]
    assert answer["node"] == note["node"] == PROBE_NODE
    assert note["id"] == probe_id and note["policy_pick"] in POLICY_NODES
    assert answer["fallbacks"][0] == note["policy_pick"]
    assert note["ttft_ms"] <= note["ttft_target_ms"] == 800.0
    rt.recorder.flush()
    record = DecisionRecord.objects.get(pk=answer["decision_id"])
    assert record.probe == probe_id and record.receipt["probe"] == note


def _check_policys(answer: dict[str, Any]) -> None:
    assert "probe" not in answer and answer["node"] in POLICY_NODES


def test_the_rest_answer_carries_the_probe_on_its_decisions_only(
    probing: tuple[Runtime, int], client_for: Any
) -> None:
    rt, probe_id = probing
    service = client_for("service")
    for probed in (True, False):
        for session in sessions(probed=probed):
            idle(rt)
            body = {**SHORT, "session_id": session}
            response = service.post("/api/v1/placements", body, format="json")
            assert response.status_code == 200, response.content
            if probed:
                _check_probed(rt, response.json(), probe_id)
            else:
                _check_policys(response.json())


def test_a_batch_answer_carries_it_on_the_probes_decisions_only(
    probing: tuple[Runtime, int], client_for: Any
) -> None:
    rt, probe_id = probing
    (taken,), left = sessions(probed=True, count=1), sessions(probed=False, count=2)
    idle(rt)
    requests = [{**SHORT, "session_id": s} for s in (left[0], taken, left[1])]
    response = client_for("service").post(
        "/api/v1/placements:batch", {"requests": requests}, format="json"
    )
    assert response.status_code == 200, response.content
    first, probed, last = response.json()["decisions"]
    _check_policys(first)
    _check_probed(rt, probed, probe_id)
    _check_policys(last)


def _fast(app: DecisionFastPath, path: str, body: Any, key: str) -> dict[str, Any]:
    """One request through the ASGI fast path; its JSON answer."""
    raw = json.dumps(body).encode()
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    headers = [
        (b"content-type", b"application/json"),
        (b"host", b"localhost:8000"),
        (b"authorization", f"Bearer {key}".encode()),
    ]
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers}
    async_to_sync(app)(scope, receive, send)
    assert sent[0]["status"] == 200, sent
    answer: dict[str, Any] = json.loads(sent[1]["body"])
    return answer


async def _not_django(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the fast path handed a hot decision to Django")


def test_the_fast_paths_answers_carry_it_too(probing: tuple[Runtime, int]) -> None:
    rt, probe_id = probing
    key = api_key_create(name="fast-probe", role="service").secret
    assert keyring.lookup(digest_of(key)) is not None  # warm, as a first (Django) call makes it
    app = DecisionFastPath(_not_django)
    (taken,), (left,) = sessions(probed=True, count=1), sessions(probed=False, count=1)
    idle(rt)
    probed = _fast(app, "/api/v1/placements", {**SHORT, "session_id": taken}, key)
    _check_probed(rt, probed, probe_id)
    idle(rt)
    _check_policys(_fast(app, "/api/v1/placements", {**SHORT, "session_id": left}, key))
    idle(rt)
    batch = {"requests": [{**SHORT, "session_id": s} for s in (taken, left)]}
    in_batch, policys = _fast(app, "/api/v1/placements:batch", batch, key)["decisions"]
    _check_probed(rt, in_batch, probe_id)
    _check_policys(policys)
