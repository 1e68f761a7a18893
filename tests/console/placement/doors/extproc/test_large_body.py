"""A prompt of about 100,000 tokens through the picker's gRPC entry point, its ~400 KB body in
13 chunks as Envoy streams it: the picker places it on its full size, echoes the body byte for
byte, and the node it picked, sent that body as Envoy would, counts every token."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
import requests

from console.placement.doors.extproc.envoy import BODY_CHUNK_BYTES
from console.placement.doors.extproc.server import PickerServer
from console.placement.engine.runtime import Runtime
from console.placement.models import DecisionRecord
from optimizer.emulator import FleetThread
from optimizer.emulator.text import trace_prompt
from tests.console.placement.doors.extproc.envoy_client import (
    EnvoyStream,
    chunks,
    echoed,
    endpoints_of,
    request_body,
    request_headers,
)
from tests.console.placement.doors.router.conftest import down_nodes, emulated, fleet

pytestmark = pytest.mark.django_db
__all__ = ["down_nodes", "emulated", "fleet"]  # the router's emulated fleet, with addresses
TOKENS = 100_000
PARTS = 13  # ~31 KB chunks: llm-d-router issue #1109 counted ~7 for a 220 KB body


@pytest.fixture
def picker(fleet: Runtime) -> Iterator[grpc.Channel]:
    server = PickerServer(port=0, health_port=0, source="app", host="127.0.0.1").start()
    with grpc.insecure_channel(f"127.0.0.1:{server.bound_port}") as channel:
        yield channel
    server.stop()


def test_a_100k_token_prompt_in_chunks_is_placed_and_reaches_the_node_whole(
    picker: grpc.Channel, fleet: Runtime, emulated: FleetThread
) -> None:
    prompt = trace_prompt(list(range(1, 200)), TOKENS)
    body = json.dumps({"model": "m1", "prompt": prompt, "max_tokens": 1}).encode()
    parts = chunks(body, PARTS)
    assert len(parts) == PARTS
    stream = EnvoyStream(picker)
    stream.send(request_headers("/v1/completions"))
    stream.send(*[request_body(p, end_of_stream=i == PARTS - 1) for i, p in enumerate(parts)])
    headers, *bodies = stream.recv(1 + PARTS)
    stream.close()
    endpoints, _ = endpoints_of(headers)
    forwarded = echoed(bodies)
    assert forwarded == body
    by_address = {url.removeprefix("http://"): n for n, url in emulated.urls.items()}
    decision_id = next(
        h.header.raw_value.decode()
        for h in headers.request_headers.response.header_mutation.set_headers
        if h.header.key == "x-locus-decision-id"
    )
    fleet.recorder.flush()
    record = DecisionRecord.objects.get(pk=decision_id)
    assert record.prompt_tokens == TOKENS
    assert by_address[endpoints[0]] == record.node in ("n1", "n2")
    # Envoy now sends the echoed body to the pick.
    answer: Any = requests.post(
        f"http://{endpoints[0]}/v1/completions", data=forwarded, timeout=10
    ).json()
    assert answer["usage"]["prompt_tokens"] == TOKENS


def test_a_body_over_grpcs_4_mib_in_one_message_is_placed_and_echoed_in_pieces(
    envoy: Callable[[], EnvoyStream],
) -> None:
    # One 5 MiB message, as an Envoy that buffered the body sends it: under
    # LOCUS_PICKER_MAX_BODY_BYTES, so the picker reads it (grpcio alone refuses over 4 MiB).
    padding = "x" * (5 * 1024 * 1024)
    body = json.dumps({"model": "llama-3.1-8b", "prompt": "hi", "padding": padding}).encode()
    stream = envoy()
    stream.send(request_headers("/v1/completions"), request_body(body, end_of_stream=True))
    headers = stream.recv()[0]
    assert headers.WhichOneof("response") == "request_headers", headers
    pieces = -(-len(body) // BODY_CHUNK_BYTES)
    bodies = stream.recv(pieces)
    assert echoed(bodies) == body
    assert bodies[-1].request_body.response.body_mutation.streamed_response.end_of_stream
    assert stream.close() == []
