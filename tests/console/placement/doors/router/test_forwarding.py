"""The walk down the pick and its fallbacks: a dead node (its port closed) costs the client
nothing, counts on the node's breaker, and opens it after enough calls."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from console.placement.engine.runtime import Runtime
from optimizer.emulator import FleetThread
from tests.console.placement.doors.router.conftest import eventually, recorded

pytestmark = pytest.mark.django_db
BODY = {"model": "m1", "prompt": "Hello there " * 10, "max_tokens": 3, "stream": True}


def test_a_dead_node_falls_back_with_no_client_error(
    post: Callable[..., requests.Response],
    emulated: FleetThread,
    fleet: Runtime,
    set_loads: Callable[..., None],
) -> None:
    emulated.stop_node("n1")
    for _ in range(3):  # engine_settings: 3 consecutive failures open a breaker
        assert fleet.breakers.state("n1") == "closed"
        # n1 idle and n2 busy: the engine picks n1, which is gone.
        set_loads(n1=(0, 0, 0.0, 0.0), n2=(40, 60, 0.9, 0.0))
        answer = post("/v1/completions", BODY, stream=True)
        assert answer.status_code == 200
        assert answer.headers["x-locus-node"] == "n2"
        assert b"".join(answer.iter_content(None)).endswith(b"data: [DONE]\n\n")
        decision_id = answer.headers["x-locus-decision-id"]
    eventually(lambda: fleet.breakers.state("n1") == "open")
    assert fleet.breakers.state("n2") == "closed"
    record = recorded(fleet, decision_id)
    assert record.node == "n1" and record.fallbacks[0] == "n2"
    assert record.ok is True and record.ttft_ms is not None
    # With n1's breaker open the engine no longer picks it.
    set_loads(n1=(0, 0, 0.0, 0.0), n2=(40, 60, 0.9, 0.0))
    answer = post("/v1/completions", {**BODY, "stream": False})
    assert answer.status_code == 200 and answer.headers["x-locus-node"] == "n2"


def test_no_node_reachable_is_a_502_naming_each_attempt(
    post: Callable[..., requests.Response], emulated: FleetThread
) -> None:
    emulated.stop_node("n1")
    emulated.stop_node("n2")
    answer = post("/v1/completions", BODY)
    assert answer.status_code == 502
    error = answer.json()["error"]
    assert error["type"] == "upstream_error"
    assert set(error["attempts"]) == {"n1", "n2"}
    assert answer.headers["x-locus-decision-id"]


@pytest.mark.parametrize("down_nodes", [("n1",)])
def test_a_5xx_before_the_first_byte_falls_back(
    post: Callable[..., requests.Response], fleet: Runtime, set_loads: Callable[..., None]
) -> None:
    chat = {"model": "m1", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    for _ in range(3):
        set_loads(n1=(0, 0, 0.0, 0.0), n2=(40, 60, 0.9, 0.0))  # the pick: n1, down (503)
        answer = post("/v1/chat/completions", chat)
        assert answer.status_code == 200
        assert answer.headers["x-locus-node"] == "n2"
        record = recorded(fleet, answer.headers["x-locus-decision-id"])
        assert record.node == "n1" and record.ok is True
    eventually(lambda: fleet.breakers.state("n1") == "open")
    assert fleet.breakers.state("n2") == "closed"


@pytest.mark.parametrize("down_nodes", [("n1", "n2")])
def test_a_5xx_from_the_last_node_is_relayed_and_counts_against_it(
    post: Callable[..., requests.Response], fleet: Runtime
) -> None:
    for _ in range(3):  # each call: one node skipped, the other's 503 relayed
        answer = post("/v1/completions", BODY)
        assert answer.status_code == 503
        assert "is down" in answer.json()["error"]["message"]  # the node's own answer
        recorded(fleet, answer.headers["x-locus-decision-id"])
    eventually(lambda: {fleet.breakers.state(n) for n in ("n1", "n2")} == {"open"})
    answer = post("/v1/completions", BODY)
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert error["code"] == "no_eligible_node"
    assert error["reasons"] == {
        "n1": "breaker_open",
        "n2": "breaker_open",
        "us1": "model_not_served",
    }


def test_a_node_that_fails_mid_answer_cuts_the_client_and_counts_against_it(
    post: Callable[..., requests.Response], emulated: FleetThread, fleet: Runtime
) -> None:
    answer = post("/v1/completions", {**BODY, "max_tokens": 5000}, stream=True)
    lines = answer.iter_lines()
    assert next(lines).startswith(b"data: ")
    node = answer.headers["x-locus-node"]
    emulated.stop_node(node)  # its open answers are cut
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        for _ in lines:
            pass
    record = recorded(fleet, answer.headers["x-locus-decision-id"])
    assert record.ok is False and record.ttft_ms is None


def _client_sockets(port: int) -> dict[str, int]:
    """TCP sockets whose remote port is `port`, by state (proc(5), /proc/net/tcp: 01
    ESTABLISHED, 06 TIME_WAIT, the state a closing side is left in)."""
    states: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rpartition(":")[2], 16) == port:
                states[fields[3]] = states.get(fields[3], 0) + 1
    return states


def test_calls_to_a_node_reuse_one_pooled_connection(
    post: Callable[..., requests.Response],
    emulated: FleetThread,
    set_loads: Callable[..., None],
) -> None:
    port = int(emulated.urls["n1"].rpartition(":")[2])
    before = _client_sockets(port)  # a past test's fleet may have left some on this port
    for stream in (True, False, True, False, True):
        set_loads(n1=(0, 0, 0.0, 0.0), n2=(40, 60, 0.9, 0.0))
        answer = post("/v1/completions", {**BODY, "stream": stream})
        assert answer.status_code == 200 and answer.headers["x-locus-node"] == "n1"
    # One connection to n1 for all five calls (none closed: no new TIME_WAIT).
    after = _client_sockets(port)
    assert after.get("01", 0) == before.get("01", 0) + 1
    assert after.get("06", 0) == before.get("06", 0)
