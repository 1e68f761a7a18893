"""The ASGI fast path answers hot decisions exactly as the DRF views do, and hands everything
it should not serve to Django."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from console.access.keyring import digest_of, keyring
from console.access.services import api_key_create
from console.api.errors import INTERNAL_ERROR_MESSAGE
from console.placement.doors.fastpath import ROUTES, DecisionFastPath
from console.placement.doors.handlers import decide_batch
from tests.console.placement.conftest import SMALL_REQUEST

pytestmark = pytest.mark.django_db
REQUEST = SMALL_REQUEST


class Fallback:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _call(
    app: DecisionFastPath,
    path: str,
    body: Any,
    key: str | None,
    method: str = "POST",
    host: str = "localhost:8000",
    seen_headers: dict[bytes, bytes] | None = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    headers = [(b"content-type", content_type.encode()), (b"host", host.encode())]
    if key is not None:
        headers.append((b"authorization", f"Bearer {key}".encode()))
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    chunks = [
        {"type": "http.request", "body": raw[:10], "more_body": True},
        {"type": "http.request", "body": raw[10:], "more_body": False},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return chunks.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    async_to_sync(app)(scope, receive, send)
    status = sent[0]["status"]
    if seen_headers is not None:
        seen_headers.update(sent[0]["headers"])
    payload = sent[1]["body"]
    return status, json.loads(payload) if payload else None


def _warm_key(role: str = "service") -> str:
    secret = api_key_create(name=f"fast-{role}", role=role).secret
    assert keyring.lookup(digest_of(secret)) is not None  # what a first (Django) call does
    return secret


def test_it_answers_a_hot_decision_like_the_view(example_engine: Any) -> None:
    fallback = Fallback()
    app = DecisionFastPath(fallback)
    headers: dict[bytes, bytes] = {}
    status, body = _call(
        app,
        "/api/v1/placements",
        {**REQUEST, "explain": True},
        _warm_key(),
        seen_headers=headers,
    )
    assert status == 200 and fallback.calls == 0
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"x-content-type-options"] == b"nosniff"  # as SecurityMiddleware adds
    assert body["node"] in {"muc-l4-1", "fra-h100-1"}
    assert body["policy"] == {"name": "weighted-score", "version": "builtin"}
    assert body["candidates"][0]["node"] == body["node"]
    example_engine.recorder.flush()
    from console.placement.models import DecisionRecord

    assert DecisionRecord.objects.filter(pk=body["decision_id"]).exists()


def test_errors_have_the_api_shape(example_engine: Any) -> None:
    app = DecisionFastPath(Fallback())
    key = _warm_key()
    status, body = _call(app, "/api/v1/placements", {**REQUEST, "model": "gpt-9"}, key)
    assert (status, body["errors"]) == (400, {"model": ["Unknown model 'gpt-9'."]})
    status, body = _call(app, "/api/v1/placements", {**REQUEST, "site": "muc-edge"}, key)
    assert status == 400 and body["errors"]["source"]
    status, body = _call(app, "/api/v1/placements", b"{not json", key)
    assert status == 400 and body["message"].startswith("JSON parse error")
    assert body["errors"]["body"] == [body["message"]]
    status, body = _call(app, "/api/v1/placements", b"[" * 100_000, key)
    assert status == 400 and body["message"].startswith("JSON parse error")
    status, body = _call(app, "/api/v1/placements", {**REQUEST, "prompt_tokens": 10**7}, key)
    assert status == 503 and body["reasons"]["fra-h100-1"] == "no_kv_room"


def test_an_unexpected_error_is_a_logged_json_500(
    example_engine: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(data: Any, caller: str) -> Any:
        raise RuntimeError("engine bug")

    monkeypatch.setitem(ROUTES, "/api/v1/placements", broken)
    app = DecisionFastPath(Fallback())
    with caplog.at_level("ERROR", logger="django.request"):
        status, body = _call(app, "/api/v1/placements", REQUEST, _warm_key())
    assert (status, body) == (500, {"message": INTERNAL_ERROR_MESSAGE})
    (logged,) = [r for r in caplog.records if r.name == "django.request"]
    assert logged.exc_info is not None and "engine bug" in str(logged.exc_info[1])


def test_a_batch_is_answered_in_order(example_engine: Any) -> None:
    app = DecisionFastPath(Fallback())
    key = _warm_key()
    status, body = _call(
        app,
        "/api/v1/placements:batch",
        {"requests": [REQUEST, {**REQUEST, "model": "nope"}]},
        key,
    )
    assert status == 400
    assert body["errors"]["requests"]["1"]["model"] == ["Unknown model 'nope'."]
    status, body = _call(app, "/api/v1/placements:batch", {"requests": [REQUEST, REQUEST]}, key)
    assert status == 200 and len(body["decisions"]) == 2
    assert all(d["node"] in {"muc-l4-1", "fra-h100-1"} for d in body["decisions"])


@pytest.mark.parametrize(
    "case",
    ["no key", "cold key", "viewer key", "other route", "GET", "foreign host", "text body"],
)
def test_anything_else_goes_to_django(case: str, example_engine: Any) -> None:
    fallback = Fallback()
    app = DecisionFastPath(fallback)
    key = {"no key": None, "cold key": "lk_never_seen", "viewer key": _warm_key("viewer")}.get(
        case, _warm_key()
    )
    path = "/api/v1/nodes" if case == "other route" else "/api/v1/placements"
    status, _ = _call(
        app,
        path,
        REQUEST,
        key,
        method="GET" if case == "GET" else "POST",
        host="evil.example" if case == "foreign host" else "127.0.0.1:8000",
        content_type="text/plain" if case == "text body" else "application/json",
    )
    assert status == 299 and fallback.calls == 1


def test_long_batches_leave_the_loop(example_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches up to INLINE_BATCH_MAX are decided on the loop, longer ones in a thread."""
    threads: list[str] = []

    def recording(data: Any, caller: str) -> Any:
        threads.append(threading.current_thread().name)
        return decide_batch(data, caller)

    monkeypatch.setitem(ROUTES, "/api/v1/placements:batch", recording)
    monkeypatch.setattr("console.placement.doors.fastpath.INLINE_BATCH_MAX", 2)
    app = DecisionFastPath(Fallback())
    key = _warm_key()
    answers = [
        _call(app, "/api/v1/placements:batch", {"requests": [REQUEST] * n}, key) for n in (2, 3)
    ]
    assert [(status, len(body["decisions"])) for status, body in answers] == [(200, 2), (200, 3)]
    assert threads[0] != threads[1]
    assert threads[1].startswith("asyncio")  # the loop's default executor


def test_a_nul_character_is_refused_naming_the_field(example_engine: Any) -> None:
    """PostgreSQL cannot store U+0000: a decision carrying one used to be answered 200 and
    then block the recorder's queue (docs/hardening.md)."""
    app = DecisionFastPath(Fallback())
    key = _warm_key()
    status, body = _call(app, "/api/v1/placements", {**REQUEST, "session_id": "a\x00b"}, key)
    assert status == 400 and "NUL" in body["errors"]["session_id"][0]
    batch = {"requests": [REQUEST, {**REQUEST, "model": "llama\x00"}]}
    status, body = _call(app, "/api/v1/placements:batch", batch, key)
    assert status == 400 and "NUL" in body["errors"]["requests"]["1"]["model"][0]
    utf16 = json.dumps({**REQUEST, "session_id": "a\x00b"}).encode("utf-16")
    status, body = _call(app, "/api/v1/placements", utf16, key)  # RFC 8259 allows UTF-16
    assert status == 400 and "NUL" in body["errors"]["session_id"][0]
    status, body = _call(app, "/api/v1/placements", {**REQUEST, "session_id": "a\\u0000b"}, key)
    assert status == 200  # an escaped backslash is text, not a NUL
    example_engine.recorder.flush()
    assert example_engine.recorder.stats.written == 1


def test_a_decision_on_the_fast_path_belongs_to_its_key(example_engine: Any) -> None:
    """Decided on the loop, recorded with the key's identity, so only that key (through
    Django, like every outcome) may report what happened."""
    from rest_framework.test import APIClient

    from console.placement.models import DecisionRecord

    owner = _warm_key()
    status, single = _call(DecisionFastPath(Fallback()), "/api/v1/placements", REQUEST, owner)
    assert status == 200
    status, batch = _call(
        DecisionFastPath(Fallback()), "/api/v1/placements:batch", {"requests": [REQUEST]}, owner
    )
    assert status == 200
    example_engine.recorder.flush()
    ids = [single["decision_id"], batch["decisions"][0]["decision_id"]]
    assert set(DecisionRecord.objects.filter(pk__in=ids).values_list("decided_by", flat=True)) == {
        "key:fast-service"
    }
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {_warm_key('operator')}")
    for decision_id in ids:
        url = f"/api/v1/placements/{decision_id}/outcome"
        assert other.post(url, {"ok": False}, format="json").status_code == 404
    mine = APIClient()
    mine.credentials(HTTP_AUTHORIZATION=f"Bearer {owner}")
    assert mine.post(url, {"ok": True}, format="json").status_code == 200
