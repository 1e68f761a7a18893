"""A client that goes away frees its sequence at once: its batch slot and KV go to the next."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable

import pytest
import requests

from optimizer.emulator import EmulatedFleet, FleetThread
from tests.optimizer.emulator.client import Timed
from tests.optimizer.emulator.timing import Served, run
from tests.optimizer.fleets import TINY, tiny_topology

EDGE = 0  # edge-s in TINY: batch limit 2, 2k prefill tokens/s, 20 ms + 2 ms a step


def _state(served: FleetThread) -> tuple[int, int, int]:
    def read(fleet: EmulatedFleet) -> tuple[int, int, int]:
        engine = fleet.engines(EDGE)[0]
        return engine.running, engine.waiting, fleet.nodes[EDGE].reserved

    return served.call(read)


def _until(served: FleetThread, check: Callable[[tuple[int, int, int]], bool]) -> None:
    deadline = time.monotonic() + 5
    while not check(_state(served)):
        assert time.monotonic() < deadline, _state(served)
        time.sleep(0.01)


def _open(served: FleetThread, first_id: int) -> requests.Response:
    prompt = list(range(first_id, first_id + 100))
    body = {"model": "m1", "prompt": prompt, "max_tokens": 50_000, "stream": True}
    url = served.urls["edge-s"] + "/v1/completions"
    return requests.post(url, json=body, stream=True, timeout=5)


def test_a_stream_closed_mid_answer_gives_its_slot_to_the_queue() -> None:
    with FleetThread(tiny_topology(), port_base=0) as served:
        one, two, three = (_open(served, 1000 * i) for i in range(3))
        # (An abandoned line iterator closes its response: keep them.)
        lines = [response.iter_lines() for response in (one, two, three)]
        for line in lines[:2]:
            assert next(line).startswith(b"data: ")
        _until(served, lambda s: s[:2] == (2, 1))  # the third waits for a slot
        full_kv = _state(served)[2]
        one.close()
        # The third is admitted (its prefill takes 50 ms) and streams.
        assert next(lines[2]).startswith(b"data: ")
        running, waiting, kv = _state(served)
        assert (running, waiting, kv) == (2, 0, full_kv)
        two.close()
        three.close()
        _until(served, lambda s: s == (0, 0, 0))


def test_a_client_that_gives_up_waiting_for_a_whole_answer_frees_its_sequence() -> None:
    with FleetThread(tiny_topology(), port_base=0) as served:
        url = served.urls["edge-s"] + "/v1/completions"
        body = {"model": "m1", "prompt": "x" * 400, "max_tokens": 50_000}
        with pytest.raises(requests.Timeout):
            requests.post(url, json=body, timeout=0.3)
        _until(served, lambda s: s == (0, 0, 0))


def test_many_concurrent_streams_are_all_served_in_full() -> None:
    async def scenario(served: Served) -> None:
        async def one(i: int) -> Timed:
            prompt = list(range(1000 * i, 1000 * i + 16))
            return await served.stream("core-l", {"model": "m1", "prompt": prompt, "max_tokens": 8})

        timed = await asyncio.gather(*(one(i) for i in range(300)))
        assert {t.status for t in timed} == {200}
        assert all(len(t.token_times) == 8 and t.done is not None for t in timed)
        assert len(served.ended) == 300
        assert served.server.fleet is not None
        node = served.server.fleet.nodes[1]
        assert (node.running, node.reserved, len(node.waiting)) == (0, 0, 0)

    # core-l with room for all of them in one batch.
    profiles = copy.deepcopy(TINY["profiles"])
    profiles[0]["max_batch"] = 512
    run(tiny_topology(profiles=profiles), scenario)


def test_a_node_taken_off_the_network_refuses_and_cuts_while_the_others_serve() -> None:
    with FleetThread(tiny_topology(), port_base=0) as served:
        stream = _open(served, 0)
        lines = stream.iter_lines()
        assert next(lines).startswith(b"data: ")
        served.stop_node("edge-s")
        with pytest.raises(requests.RequestException):
            for _ in lines:
                pass
        _until(served, lambda s: s == (0, 0, 0))
        with pytest.raises(requests.ConnectionError):
            _open(served, 1000)
        body = {"model": "m1", "prompt": "hi", "max_tokens": 1}
        url = served.urls["core-l"] + "/v1/completions"
        assert requests.post(url, json=body, timeout=5).status_code == 200
