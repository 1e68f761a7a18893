"""A client that goes away frees its sequence at once: its batch slot and KV go to the next."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import requests

from optimizer.emulator import EmulatedFleet, FleetThread
from tests.optimizer.fleets import tiny_topology

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
