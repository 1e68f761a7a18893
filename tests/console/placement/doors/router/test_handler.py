"""One call from start to end: its source, its decision header, every bad input with its code
in OpenAI's error shape, and a client that goes away cancelling the node's request."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
import yaml
from prometheus_client import REGISTRY

from console.placement.doors.router.app import RouterServer
from console.placement.engine.runtime import Runtime
from console.placement.models import DecisionRecord
from optimizer.emulator import EmulatedFleet, FleetThread
from optimizer.topology_files import parse_topology
from tests.console.placement.doors.router.conftest import FLEET, eventually, recorded

pytestmark = pytest.mark.django_db
Post = Callable[..., requests.Response]
BODY = {"model": "m1", "prompt": "Say something.", "max_tokens": 2}


def _error(answer: requests.Response, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    error: dict[str, Any] = answer.json()["error"]
    assert {"message", "type", "param", "code"} <= set(error)
    return error


def test_an_answer_names_its_decision(post: Post, fleet: Runtime) -> None:
    answer = post("/v1/completions", BODY)
    assert answer.status_code == 200
    record = recorded(fleet, answer.headers["x-locus-decision-id"])
    assert record.source == "app" and record.decided_by == "key:router-client"


def test_the_source_comes_from_a_header_or_a_body_field_else_the_default(
    post: Post, fleet: Runtime
) -> None:
    header = post("/v1/completions", BODY, headers={"x-locus-source": "nowhere"})
    assert _error(header, 400)["param"] == "source"
    field = post("/v1/completions", {**BODY, "locus_source": "nowhere"})
    assert "nowhere" in _error(field, 400)["message"]
    assert _error(post("/v1/completions", {**BODY, "locus_source": 7}), 400)["param"] == (
        "locus_source"
    )
    named = post("/v1/completions", {**BODY, "locus_source": "app"})
    assert named.status_code == 200


def test_no_source_at_all_is_a_400(fleet: Runtime, service_key: str) -> None:
    server = RouterServer(port=0, source=None).start()
    try:
        answer = requests.post(
            server.url + "/v1/completions",
            json=BODY,
            headers={"Authorization": f"Bearer {service_key}"},
            timeout=10,
        )
    finally:
        server.stop()
    assert "No request source" in _error(answer, 400)["message"]


@pytest.mark.parametrize(
    ("raw", "status", "words"),
    [
        (b"{not json", 400, "could not parse"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"model": "m1"}', 400, "prompt"),
        (b'{"model": "m1", "prompt": "x", "max_tokens": 0}', 400, "max_tokens"),
        (b'{"model": "nope", "prompt": "x"}', 404, "Unknown model"),
    ],
)
def test_a_bad_body_gets_its_code(post: Post, raw: bytes, status: int, words: str) -> None:
    answer = post("/v1/completions", None, data=raw, headers={"content-type": "application/json"})
    error = _error(answer, status)
    assert words in error["message"] or words in str(error.get("errors"))
    if status == 404:
        assert error["code"] == "model_not_found" and error["param"] == "model"


def test_nothing_eligible_is_a_503_with_the_reasons(post: Post) -> None:
    # m2 runs only in the US; the interactive SLO keeps data in the EU.
    error = _error(post("/v1/completions", {**BODY, "model": "m2"}), 503)
    assert error["code"] == "no_eligible_node"
    assert error["reasons"] == {
        "n1": "model_not_served",
        "n2": "model_not_served",
        "us1": "residency",
    }


def _disconnects() -> float:
    return REGISTRY.get_sample_value("locus_router_client_disconnects_total") or 0.0


def _busy(fleet: FleetThread) -> int:
    def count(f: EmulatedFleet) -> int:
        return sum(e.running + e.waiting for i in range(3) for e in f.engines(i))

    return fleet.call(count)


def test_a_client_that_goes_away_cancels_the_nodes_request(
    post: Post, emulated: FleetThread, fleet: Runtime
) -> None:
    before = _disconnects()
    body = {**BODY, "max_tokens": 5000, "stream": True}  # 200 s of decoding
    answer = post("/v1/completions", body, stream=True)
    lines = answer.iter_lines()
    assert next(lines).startswith(b"data: ")  # a token reached the client
    assert _busy(emulated) == 1
    decision_id = answer.headers["x-locus-decision-id"]
    answer.close()
    eventually(lambda: _busy(emulated) == 0)  # the node freed the sequence
    eventually(lambda: _disconnects() == before + 1)
    time.sleep(0.05)
    fleet.recorder.flush()
    # Not an outcome: the node did nothing wrong.
    assert DecisionRecord.objects.get(pk=decision_id).ok is None


class _Lingering(BaseHTTPRequestHandler):
    """A node that streams one token, its usage and the terminator, then keeps the connection
    open (as a busy server may before its last chunk): the client has its whole answer first."""

    protocol_version = "HTTP/1.1"
    release = threading.Event()
    EVENTS = (
        b'data: {"choices":[{"index":0,"text":"hi"}]}\n\n',
        b'data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1,'
        b'"total_tokens":5}}\n\n',
        b"data: [DONE]\n\n",
    )

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in self.EVENTS:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.release.wait(30)
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def lingering(fleet: Runtime) -> Iterator[None]:
    """Every node's address is a `_Lingering` server."""
    from console.inventory.services import topology_import

    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _Lingering) for _ in FLEET["nodes"]]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    data = copy.deepcopy(FLEET)
    for node, server in zip(data["nodes"], servers, strict=True):
        node["address"] = f"127.0.0.1:{server.server_address[1]}"
    topology_import(topology=parse_topology(yaml.safe_dump(data)))
    fleet.refresh()
    _Lingering.release.clear()
    yield
    _Lingering.release.set()
    for server in servers:
        server.shutdown()


def test_a_client_that_hangs_up_after_the_terminator_had_its_answer(
    post: Post, fleet: Runtime, lingering: None
) -> None:
    # OpenAI's SDKs stop reading at `data: [DONE]` and may close the connection before the
    # node ends its stream: that call was served in full, and its outcome must say so.
    before = _disconnects()
    answer = post("/v1/completions", {**BODY, "stream": True}, stream=True)
    decision_id = answer.headers["x-locus-decision-id"]
    lines = []
    for line in answer.iter_lines():
        if line:
            lines.append(line)
        if line == b"data: [DONE]":
            break
    assert len(lines) == 2  # a token and the terminator: the usage chunk was not asked for
    answer.close()
    record = recorded(fleet, decision_id)  # within 5 s: the node holds its stream for 30
    assert record.ok is True and record.ttft_ms is not None
    assert _disconnects() == before
