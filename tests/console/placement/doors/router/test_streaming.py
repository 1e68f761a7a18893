"""Answers relayed through the router arrive byte for byte as a direct call to the same node
gives them: streamed (completions and chat, with and without a usage chunk asked) and whole.

An answer's `id` (a fresh uuid per answer) and `created` (its second) differ between any two
calls to the same node; they are blanked on both sides before comparing, and nothing else."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import requests

from console.placement.doors.router.app import RouterServer
from console.placement.doors.router.streaming import SseRelay
from optimizer.emulator import FleetThread

pytestmark = pytest.mark.django_db
_VARYING = re.compile(rb'"id":"[a-z]+-[0-9a-f]+","object":"([a-z_.]+)","created":\d+')

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "completions": ("/v1/completions", {"model": "m1", "prompt": "Why is the sky blue? " * 40}),
    "chat": (
        "/v1/chat/completions",
        {"model": "m1", "messages": [{"role": "user", "content": "Why is the sky blue?"}]},
    ),
}


def _blank(body: bytes) -> bytes:
    return _VARYING.sub(rb'"id":"-","object":"\1","created":0', body)


def _direct(fleet: FleetThread, node: str, path: str, body: dict[str, Any]) -> bytes:
    answer = requests.post(
        fleet.urls[node] + path, json=body, headers={"x-locus-source": "app"}, timeout=10
    )
    assert answer.status_code == 200
    return answer.content


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("usage", [False, True])
def test_a_streamed_answer_is_byte_identical_to_a_direct_call(
    post: Callable[..., requests.Response], emulated: FleetThread, case: str, usage: bool
) -> None:
    path, body = CASES[case]
    body = {**body, "max_tokens": 6, "stream": True}  # 6 chunks: one per 40 ms decode step
    if usage:
        body["stream_options"] = {"include_usage": True}
    through = post(path, body, stream=True)
    assert through.status_code == 200
    assert through.headers["content-type"].startswith("text/event-stream")
    received = b"".join(through.iter_content(chunk_size=None))
    node = through.headers["x-locus-node"]  # the emulated node's own header, passed on
    direct = _direct(emulated, node, path, body)
    assert _blank(received) == _blank(direct)
    assert received.endswith(b"data: [DONE]\n\n")
    assert (b'"usage":{' in received) is usage
    assert through.headers["x-locus-decision-id"]


def test_a_whole_answer_is_byte_identical_to_a_direct_call(
    post: Callable[..., requests.Response], emulated: FleetThread
) -> None:
    path, body = CASES["chat"]
    body = {**body, "max_tokens": 5}
    through = post(path, body)
    assert through.status_code == 200
    direct = _direct(emulated, through.headers["x-locus-node"], path, body)
    assert _blank(through.content) == _blank(direct)
    assert through.json()["usage"]["completion_tokens"] == 5


def test_the_relay_keeps_events_whole_however_the_bytes_are_cut() -> None:
    stream = (
        b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
        b'data: {"choices":[{"delta":{"content":"Hi"}}]}\r\n\r\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n'
        b"data: [DONE]\n\n"
    )
    relay = SseRelay(strip_usage=True)
    out = b"".join(relay.feed(stream[i : i + 7], now=float(i)) for i in range(0, len(stream), 7))
    out += relay.close()
    assert out == stream.replace(
        b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n', b""
    )
    assert relay.usage == {"prompt_tokens": 3, "completion_tokens": 1}
    # The role-only opening is no token: the first one is in the second event.
    second = stream.index(b"Hi")
    assert relay.first_token is not None and relay.first_token >= second - 7


def test_a_usage_the_client_asked_for_stays() -> None:
    event = b'data: {"choices":[],"usage":{"prompt_tokens":3}}\n\n'
    relay = SseRelay(strip_usage=False)
    assert relay.feed(event, now=0.0) == event
    assert relay.usage == {"prompt_tokens": 3}


def test_router_server_url_names_its_port(router: RouterServer) -> None:
    assert router.url.endswith(f":{router.bound_port}") and router.bound_port > 0
