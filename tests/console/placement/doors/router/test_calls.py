"""How a body is read and what the node receives: the client's bytes, except the usage the
router asks for and the `locus_source` field it removes."""

from __future__ import annotations

import json

import pytest

from console.placement.doors.openai import CHAT_COMPLETIONS, COMPLETIONS
from console.placement.doors.router.calls import Call, read_call
from console.placement.doors.router.errors import RouterError

ALL = frozenset({"n1"})


def _read(raw: bytes, headers: dict[str, str] | None = None, source: str | None = "app") -> Call:
    return read_call(
        COMPLETIONS, raw, headers=headers or {}, default_source=source, caller="c", among=ALL
    )


def test_a_call_not_streamed_is_forwarded_byte_for_byte() -> None:
    raw = b'{"model": "m1",  "prompt": "hi", "temperature": 0.5}'
    call = _read(raw)
    assert call.body == raw and not call.stream and not call.strip_usage
    assert call.decision.source == "app" and call.decision.caller == "c"
    assert call.decision.among == ALL


def test_a_stream_gets_usage_asked_with_the_clients_bytes_kept() -> None:
    raw = b' {"model": "m1", "prompt": "hi", "stream": true}'
    call = _read(raw)
    assert call.strip_usage
    asked = b'{"stream_options":{"include_usage":true},'
    assert call.body == asked + b'"model": "m1", "prompt": "hi", "stream": true}'
    assert json.loads(call.body)["stream_options"] == {"include_usage": True}


def test_a_stream_that_asked_for_usage_is_left_alone() -> None:
    raw = b'{"model": "m1", "prompt": "hi", "stream": true, '
    raw += b'"stream_options": {"include_usage": true}}'
    call = _read(raw)
    assert call.body == raw and not call.strip_usage


def test_other_stream_options_are_kept_beside_the_usage() -> None:
    raw = b'{"model": "m1", "prompt": "hi", "stream": true, "stream_options": {"x": 1}}'
    call = _read(raw)
    assert json.loads(call.body)["stream_options"] == {"x": 1, "include_usage": True}


def test_the_source_field_is_read_and_removed() -> None:
    raw = b'{"model": "m1", "prompt": "hi", "locus_source": "other"}'
    call = _read(raw)
    assert call.decision.source == "other"
    assert json.loads(call.body) == {"model": "m1", "prompt": "hi"}
    # The header wins over the field.
    assert _read(raw, {"x-locus-source": "third"}).decision.source == "third"


def test_a_chat_body_gives_its_budget() -> None:
    raw = b'{"model": "m1", "messages": [{"role": "user", "content": "hi"}], '
    raw += b'"max_completion_tokens": 9}'
    call = read_call(CHAT_COMPLETIONS, raw, headers={}, default_source="app", caller="", among=ALL)
    assert call.decision.max_output_tokens == 9


@pytest.mark.parametrize(
    "raw", [b"\xef\xbb\xbf{}", b"nope", b'{"model": "m1", "prompt": 5}', b'{"model": ""}']
)
def test_a_body_that_cannot_be_placed_is_a_400(raw: bytes) -> None:
    with pytest.raises(RouterError) as caught:
        _read(raw)
    assert caught.value.status == 400


def test_a_long_session_token_is_a_400() -> None:
    with pytest.raises(RouterError):
        _read(b'{"model": "m1", "prompt": "x"}', {"x-session-token": "s" * 201})
