"""The ext_proc picker names a running exploration probe to the client on the probe's
decisions only (docs/gateway.md, "The stream, message by message"): the response headers
answer adds `x-locus-probe`, the receipt's `probe` note as a structured-field dictionary, and
removes a node's own header of that name from the policy's answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from console.placement.doors.extproc.server import PickerServer
from console.placement.engine.runtime import Runtime
from console.placement.models import DecisionRecord
from tests.console.placement.doors.extproc.envoy_client import (
    EnvoyStream,
    endpoints_of,
    request_body,
    request_headers,
    response_body,
    response_headers,
    set_header,
)
from tests.console.placement.doors.probe_doors import (
    POLICY_NODES,
    PROBE_HEADER,
    PROBE_NODE,
    SHORT_COMPLETION,
    install_probe_fleet,
    parse_probe_header,
    sessions,
    start_probe,
)
from tests.console.twin.probe_fleet import NODES, idle

pytestmark = pytest.mark.django_db
ADDRESSES = {name: f"10.0.0.{i + 1}:8000" for i, name in enumerate(NODES)}
NODE_OF = {address: name for name, address in ADDRESSES.items()}
BODY = json.dumps(SHORT_COMPLETION).encode()


@pytest.fixture
def probing(db: Any, engine_settings: Any, client_for: Any) -> tuple[Runtime, int]:
    rt = install_probe_fleet(ADDRESSES)
    return rt, start_probe(client_for)


@pytest.fixture
def channel(engine_settings: Any) -> Iterator[grpc.Channel]:
    server = PickerServer(port=0, health_port=0, source="munich-app", host="127.0.0.1").start()
    with grpc.insecure_channel(f"127.0.0.1:{server.bound_port}") as ch:
        yield ch
    server.stop()


def _through(channel: grpc.Channel, rt: Runtime, session: str) -> tuple[str, list[str], Any]:
    """One request through the picker, answered by its pick with the node's own
    `x-locus-probe`: (the decision id, the endpoints, the response headers answer)."""
    idle(rt)
    stream = EnvoyStream(channel)
    stream.send(
        request_headers("/v1/completions", {"x-session-token": session}),
        request_body(BODY, end_of_stream=True),
    )
    answer = stream.recv(2)[0]
    decision_id = set_header(answer, "x-locus-decision-id")
    assert decision_id is not None
    endpoints = endpoints_of(answer)[0]
    stream.send(response_headers(200, served=endpoints[0]))
    receipt = stream.recv()[0].response_headers.response.header_mutation
    stream.send(response_body(b"{}", end_of_stream=True))
    stream.recv()
    stream.close()
    return decision_id, endpoints, receipt


def _set(mutation: Any) -> dict[str, str]:
    return {o.header.key: o.header.raw_value.decode() for o in mutation.set_headers}


def test_the_picker_names_the_probe_on_its_decisions_only(
    probing: tuple[Runtime, int], channel: grpc.Channel
) -> None:
    rt, probe_id = probing
    for session in sessions(probed=True):
        decision_id, endpoints, mutation = _through(channel, rt, session)
        assert NODE_OF[endpoints[0]] == PROBE_NODE and NODE_OF[endpoints[1]] in POLICY_NODES
        headers = _set(mutation)
        assert headers["x-locus-decision-id"] == decision_id
        note = parse_probe_header(headers[PROBE_HEADER])
        assert note["id"] == probe_id and note["node"] == PROBE_NODE
        assert note["policy_pick"] == NODE_OF[endpoints[1]]
        assert PROBE_HEADER not in mutation.remove_headers
        rt.recorder.flush()
        record = DecisionRecord.objects.get(pk=decision_id)
        # The REST answer's `probe`, member for member.
        assert record.probe == probe_id and note == record.receipt["probe"]
    for session in sessions(probed=False):
        decision_id, endpoints, mutation = _through(channel, rt, session)
        assert NODE_OF[endpoints[0]] in POLICY_NODES
        assert _set(mutation) == {"x-locus-decision-id": decision_id}
        assert list(mutation.remove_headers) == [PROBE_HEADER]
