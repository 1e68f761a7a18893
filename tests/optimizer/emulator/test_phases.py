"""Prefill and decode on emulated nodes over real HTTP (issue #30): a prefill node hands its
KV off with `kv_transfer_params`, a decode node takes it by those params (the router's way)
or by `x-prefiller-host-port` (llm-d's sidecar's way), and a one-phase node refuses the
other phase."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from optimizer.emulator import FleetThread
from tests.optimizer.fleets import pd_topology

PROMPT = "x" * 4000  # 1,000 tokens
REMOTE_DECODE = {"do_remote_decode": True, "do_remote_prefill": False}


@pytest.fixture(scope="module")
def fleet() -> Iterator[FleetThread]:
    with FleetThread(pd_topology(), port_base=0) as running:
        yield running


def _post(fleet: FleetThread, node: str, body: dict[str, Any], **headers: str) -> Any:
    base = {"model": "m1", "prompt": PROMPT, "max_tokens": 4}
    return requests.post(
        fleet.urls[node] + "/v1/completions", json={**base, **body}, headers=headers, timeout=20
    )


def test_a_prefill_node_hands_its_kv_to_a_decode_node(fleet: FleetThread) -> None:
    prefill = _post(fleet, "core-p", {"max_tokens": 1, "kv_transfer_params": REMOTE_DECODE})
    assert prefill.status_code == 200, prefill.text
    params = prefill.json()["kv_transfer_params"]
    assert params["remote_engine_id"] == "core-p" and params["do_remote_prefill"] is True
    decode = _post(fleet, "edge-d", {"kv_transfer_params": params})
    assert decode.status_code == 200, decode.text
    assert decode.json()["usage"]["completion_tokens"] == 4
    assert decode.headers["x-locus-node"] == "edge-d"


def test_a_decode_node_prefills_where_the_sidecar_header_says(fleet: FleetThread) -> None:
    address = fleet.urls["core-p"].removeprefix("http://")
    decode = _post(fleet, "core-d", {}, **{"x-prefiller-host-port": address})
    assert decode.status_code == 200, decode.text
    unknown = _post(fleet, "core-d", {}, **{"x-prefiller-host-port": "10.9.9.9:1"})
    assert unknown.status_code == 400


def test_one_phase_nodes_refuse_the_other_phase(fleet: FleetThread) -> None:
    assert _post(fleet, "core-p", {}).status_code == 400  # a whole request on a prefill node
    assert _post(fleet, "core-d", {}).status_code == 400  # no KV brought to a decode node
    assert _post(fleet, "edge-m", {}).status_code == 200  # mixed: both phases


def test_a_split_request_given_up_in_its_prefill_logs_one_unmeasured_line() -> None:
    """The client goes away while the prefill node (llm-d's sidecar's way) still prefills: the
    request's one line names both nodes and has no latencies."""
    log = io.StringIO()
    with FleetThread(pd_topology(), port_base=0, requests_out=log) as fleet:
        address = fleet.urls["core-p"].removeprefix("http://")
        url = fleet.urls["edge-d"] + "/v1/completions"
        body = {"model": "m1", "prompt": "y" * 80_000, "max_tokens": 4}  # 2 s of prefill
        with pytest.raises(requests.Timeout):
            requests.post(url, json=body, headers={"x-prefiller-host-port": address}, timeout=0.3)
        deadline = time.monotonic() + 5
        while not fleet.call(lambda _: log.getvalue()):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        lines = fleet.call(lambda _: log.getvalue()).splitlines()
    [record] = [json.loads(line) for line in lines]
    assert (record["node"], record["prefill_node"]) == ("edge-d", "core-p")
    assert record["ok"] is False and record["ttft_ms"] is None
