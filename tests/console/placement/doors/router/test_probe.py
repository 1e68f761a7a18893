"""The router names a running exploration probe to the client on the probe's decisions only
(docs/router.md, "What reaches the node, and what comes back"): `x-locus-probe` beside
`x-locus-decision-id`, the receipt's `probe` note as a structured-field dictionary, whole
answers and streamed ones alike; a node's own header of that name never reaches the client."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from console.placement.doors.router.app import RouterServer
from console.placement.engine.runtime import Runtime
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
from tests.console.placement.doors.router.conftest import recorded
from tests.console.twin.probe_fleet import NODES, idle

pytestmark = pytest.mark.django_db
COMPLETION = {"object": "text_completion", "choices": [{"text": "hi", "index": 0}]}
NODE_HEADER = "x-node"


class Node:
    """An HTTP node answering at once, naming itself, and claiming a probe of its own (which
    the router must not pass on)."""

    def __init__(self, name: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if body.get("stream"):
                    data = f"data: {json.dumps(COMPLETION)}\n\ndata: [DONE]\n\n".encode()
                    kind = "text/event-stream"
                else:
                    data, kind = json.dumps(COMPLETION).encode(), "application/json"
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.send_header(NODE_HEADER, name)
                self.send_header(PROBE_HEADER, "id=999")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.address = f"127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def nodes() -> Iterator[dict[str, Node]]:
    made = {name: Node(name) for name in NODES}
    yield made
    for node in made.values():
        node.server.shutdown()
        node.server.server_close()


@pytest.fixture
def probing(
    db: Any, engine_settings: Any, settings: Any, client_for: Any, nodes: dict[str, Node]
) -> Iterator[tuple[RouterServer, Runtime, int]]:
    rt = install_probe_fleet({name: node.address for name, node in nodes.items()})
    probe_id = start_probe(client_for)
    settings.LOCUS_ROUTER_OPEN = True
    server = RouterServer(port=0, source="munich-app").start()
    yield server, rt, probe_id
    server.stop()


def _call(router: RouterServer, rt: Runtime, session: str, stream: bool) -> requests.Response:
    idle(rt)
    body = {**SHORT_COMPLETION, "stream": stream}
    answer = requests.post(
        router.url + "/v1/completions", json=body, headers={"x-session-token": session}, timeout=10
    )
    assert answer.status_code == 200, answer.text
    return answer


@pytest.mark.parametrize("stream", [False, True])
def test_the_router_names_the_probe_on_its_decisions_only(
    probing: tuple[RouterServer, Runtime, int], stream: bool
) -> None:
    router, rt, probe_id = probing
    for session in sessions(probed=True):
        answer = _call(router, rt, session, stream)
        assert answer.headers[NODE_HEADER] == PROBE_NODE
        note = parse_probe_header(answer.headers[PROBE_HEADER])
        assert note["id"] == probe_id and note["node"] == PROBE_NODE
        assert note["policy_pick"] in POLICY_NODES
        record = recorded(rt, answer.headers["x-locus-decision-id"])
        # The REST answer's `probe`, member for member.
        assert record.probe == probe_id and note == record.receipt["probe"]
        assert record.node == PROBE_NODE and record.ok is True
    for session in sessions(probed=False):
        answer = _call(router, rt, session, stream)
        assert answer.headers[NODE_HEADER] in POLICY_NODES
        assert PROBE_HEADER not in answer.headers
        assert recorded(rt, answer.headers["x-locus-decision-id"]).probe is None
