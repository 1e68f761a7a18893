"""A split decision through the router: it runs the two phases itself, as vLLM
production-stack's orchestrated disaggregated-prefill mode does (docs/router.md, "Split
decisions"), against real HTTP nodes that record what they are sent."""

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
from tests.console.placement.doors.router.conftest import recorded
from tests.console.placement.pd_fleet import LONG, install
from tests.optimizer.fleets import PD_NODES

pytestmark = pytest.mark.django_db
KV_PARAMS = {"remote_engine_id": "engine-7", "remote_block_ids": [1, 2, 3], "remote_port": 5600}
COMPLETION = {"object": "text_completion", "choices": [{"text": "hi", "index": 0}]}


class Node:
    """An HTTP node that records the bodies it gets; a prefill request (one that asks for a
    remote decode) is answered with `kv_transfer_params`, as a vLLM prefill instance does."""

    def __init__(self, name: str, prefill_status: int = 200) -> None:
        self.name, self.prefill_status = name, prefill_status
        self.bodies: list[dict[str, Any]] = []
        node = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                node.bodies.append(body)
                asked = body.get("kv_transfer_params") or {}
                status = node.prefill_status if asked.get("do_remote_decode") else 200
                answer = {**COMPLETION, "kv_transfer_params": KV_PARAMS} if status == 200 else {}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.address = f"127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def prefill_status() -> int:
    return 200


@pytest.fixture
def nodes(prefill_status: int) -> Iterator[dict[str, Node]]:
    made = {n["name"]: Node(n["name"], prefill_status) for n in PD_NODES}
    yield made
    for node in made.values():
        node.server.shutdown()
        node.server.server_close()


@pytest.fixture
def pd_router(
    engine_settings: Any, settings: Any, nodes: dict[str, Node]
) -> Iterator[tuple[RouterServer, Runtime]]:
    # One failure opens a breaker: a single call shows whose breaker heard it.
    settings.LOCUS_BREAKER = {**settings.LOCUS_BREAKER, "consecutive_failures": 1}
    _, rt = install({name: node.address for name, node in nodes.items()})
    settings.LOCUS_ROUTER_OPEN = True
    server = RouterServer(port=0, source="app").start()
    yield server, rt
    server.stop()


def _call(router: RouterServer, stream: bool = False) -> requests.Response:
    body = {"model": "m1", "prompt": "x" * (4 * LONG), "max_tokens": 50, "stream": stream}
    return requests.post(router.url + "/v1/completions", json=body, timeout=10)


def test_the_router_prefills_then_decodes_with_the_kvs_whereabouts(
    pd_router: tuple[RouterServer, Runtime], nodes: dict[str, Node]
) -> None:
    router, rt = pd_router
    answer = _call(router)
    assert answer.status_code == 200, answer.text
    record = recorded(rt, answer.headers["x-locus-decision-id"])
    assert record.prefill_node and record.ok is True
    prefill, decode = nodes[record.prefill_node], nodes[record.node]
    (sent,) = prefill.bodies
    assert sent["max_tokens"] == 1 and sent["stream"] is False
    assert sent["kv_transfer_params"]["do_remote_decode"] is True
    (got,) = decode.bodies
    assert got["max_tokens"] == 50 and got["prompt"] == "x" * (4 * LONG)
    host = prefill.address.rpartition(":")[0]
    assert got["kv_transfer_params"] == {**KV_PARAMS, "remote_host": host}
    assert json.loads(answer.content)["choices"] == COMPLETION["choices"]


@pytest.mark.parametrize("prefill_status", [503])
def test_a_failed_prefill_leaves_both_phases_to_the_decode_node(
    pd_router: tuple[RouterServer, Runtime], nodes: dict[str, Node]
) -> None:
    router, rt = pd_router
    answer = _call(router)
    assert answer.status_code == 200, answer.text
    record = recorded(rt, answer.headers["x-locus-decision-id"])
    assert record.prefill_node and record.ok is True
    assert len(nodes[record.prefill_node].bodies) == 1
    (got,) = nodes[record.node].bodies
    assert "kv_transfer_params" not in got and got["max_tokens"] == 50
    assert rt.breakers.state(record.prefill_node) == "open"
    assert rt.breakers.state(record.node) == "closed"
