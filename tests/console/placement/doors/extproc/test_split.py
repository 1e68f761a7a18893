"""A split decision through the real ext_proc server: the decode node and its fallbacks are
the endpoints, and `x-prefiller-host-port` names the prefill node's `ip:port` for llm-d's
routing sidecar; an unsplit one removes a client's own (llm-d/llm-d-router
`pkg/common/routing/common.go`, `disagg_headers_handler.go`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from console.placement.doors.extproc.server import PickerServer
from console.placement.engine.runtime import runtime
from console.placement.models import DecisionRecord
from tests.console.placement.doors.extproc.envoy_client import (
    EnvoyStream,
    endpoints_of,
    request_body,
    request_headers,
    set_header,
)
from tests.console.placement.pd_fleet import LONG, install

pytestmark = pytest.mark.django_db
PREFILLER = "x-prefiller-host-port"


def _body(tokens: int) -> bytes:
    # 4 code points make a token (optimizer/prompts.py).
    return json.dumps({"model": "m1", "prompt": "x" * (4 * tokens), "max_tokens": 50}).encode()


@pytest.fixture
def stream(engine_settings: Any) -> Iterator[EnvoyStream]:
    server = PickerServer(port=0, health_port=0, source="app", host="127.0.0.1").start()
    with grpc.insecure_channel(f"127.0.0.1:{server.bound_port}") as channel:
        yield EnvoyStream(channel)
    server.stop()


def _answer(stream: EnvoyStream, tokens: int, headers: dict[str, str]) -> Any:
    stream.send(
        request_headers("/v1/completions", {"x-llm-d-inference-objective": "eu-only", **headers}),
        request_body(_body(tokens), end_of_stream=True),
    )
    return stream.recv(2)[0]


def test_a_split_decision_names_the_prefiller_for_the_decode_sidecar(
    db: Any, stream: EnvoyStream
) -> None:
    topology, _ = install()
    address = {n.name: n.address for n in topology.nodes}
    # A client's own prefiller is overwritten, never kept beside the picker's.
    answer = _answer(stream, LONG, {PREFILLER: "10.9.9.9:1"})
    endpoints, metadata = endpoints_of(answer)
    assert endpoints == metadata and endpoints[0] == address["core-d"]
    assert set_header(answer, PREFILLER) == address["core-p"]
    assert PREFILLER not in answer.request_headers.response.header_mutation.remove_headers
    stream.close()
    runtime().recorder.flush()
    record = DecisionRecord.objects.get(pk=set_header(answer, "x-locus-decision-id"))
    assert (record.node, record.prefill_node) == ("core-d", "core-p")


def test_an_unsplit_decision_removes_a_clients_prefiller(db: Any, stream: EnvoyStream) -> None:
    topology, _ = install()
    answer = _answer(stream, 200, {PREFILLER: "10.9.9.9:1"})
    assert endpoints_of(answer)[0][0] == topology.node_by_name["edge-m"].address
    assert set_header(answer, PREFILLER) is None
    assert list(answer.request_headers.response.header_mutation.remove_headers) == [PREFILLER]
