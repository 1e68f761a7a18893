"""The shared live view on Redis: another decider's sends reach this process's engine (its
queues and prefix index), this process's decisions over HTTP reach the other decider, a fresh
process warms from the stream, and with Redis unreachable the engine decides alone, says so
(gauge and log line) and rejoins when Redis is back.

Needs Redis (REDIS_URL, a database of its own such as redis://127.0.0.1:6379/3); skipped
without it, as the suite runs both ways (docs/architecture.md rule 4)."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import redis

from console.placement.engine.runtime import Runtime, reset_runtime, runtime
from console.placement.engine.sharedview import SharedView
from optimizer.decide.state.fleet import D_QUEUE
from optimizer.decide.state.shared import Send
from tests.console.placement.conftest import MIXED_FLEET, SMALL_REQUEST

REDIS_URL = os.environ.get("REDIS_URL", "")
pytestmark = pytest.mark.skipif(not REDIS_URL, reason="needs REDIS_URL (the shared view's Redis)")
MODEL = "llama-3.1-8b"
# A port of this suite's own, nothing listens there unless a test starts a Redis on it.
OUTAGE_PORT = 18399


@pytest.fixture
def stream(engine_settings: Any) -> Iterator[str]:
    """A stream of this test's own, on REDIS_URL; removed afterwards."""
    name = f"locus:test:view:{uuid.uuid4().hex}"
    engine_settings.LOCUS_SHARED_VIEW_URL = REDIS_URL
    engine_settings.LOCUS_SHARED_VIEW_STREAM = name
    reset_runtime()
    yield name
    redis.Redis.from_url(REDIS_URL).delete(name)


@pytest.fixture
def shared(db: Any, stream: str, set_loads: Callable[..., None]) -> Runtime:
    """The engine on MIXED_FLEET with every node sampled a second ago (so later sends count)."""
    from console.inventory.services import topology_import
    from optimizer.topology_files import parse_topology

    topology_import(topology=parse_topology(MIXED_FLEET))
    rt = runtime()
    rt.refresh()
    set_loads(**{n.replace("-", "_"): (0, 0, 0.0, 1.0) for n in rt.engine.live.fleet.names})  # type: ignore[union-attr]
    return rt


def _peer(stream: str, into: list[Send]) -> SharedView:
    """Another decider on the same stream, collecting what it merges."""

    def collect(sends: list[Send]) -> int:
        into.extend(sends)
        return len(sends)

    return SharedView(url=REDIS_URL, apply=collect, stream=stream)


def _queue(rt: Runtime, node: str) -> int:
    live = rt.engine.live
    assert live is not None
    return int(live.dynamic[live.fleet.index_of[node], D_QUEUE])


def test_sends_travel_both_ways_between_deciders(
    shared: Runtime, stream: str, client_for: Any
) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    view = shared.shared_view
    assert view is not None
    got: list[Send] = []
    peer = _peer(stream, got)
    peer.step(client)  # warmed: the stream is empty
    before = _queue(shared, "fra-h100-2")
    for _ in range(3):
        peer.publish(Send("fra-h100-2", MODEL, (11, 12, 13), time.time()))
    peer.step(client)
    view.step(client)
    assert _queue(shared, "fra-h100-2") == before + 3
    live = shared.engine.live
    assert live is not None
    at = np.array([live.fleet.index_of["fra-h100-2"]])
    assert live.prefix.match(at, live.fleet.model_index[MODEL], (11, 12, 13)).tolist() == [3.0]

    body = {**SMALL_REQUEST, "prefix_hashes": [21, 22]}
    answer = client_for("service").post("/api/v1/placements", body, format="json")
    assert answer.status_code == 200, answer.content
    view.step(client)  # publishes the decision's send
    peer.step(client)
    assert [(s.node, s.model, s.hashes) for s in got] == [(answer.json()["node"], MODEL, (21, 22))]


def test_a_fresh_process_warms_from_the_others_recent_sends(
    shared: Runtime, stream: str, set_loads: Callable[..., None]
) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    peer = _peer(stream, [])
    peer.step(client)
    for node in ("fra-h100-1", "fra-h100-1", "use-h100-1"):
        peer.publish(Send(node, MODEL, (5,), time.time()))
    peer.step(client)
    reset_runtime()  # as a crashed process's replacement starts
    fresh = runtime()
    fresh.refresh()
    set_loads(fra_h100_1=(0, 0, 0.0, 1.0), use_h100_1=(0, 0, 0.0, 1.0))
    assert fresh.shared_view is not None
    fresh.shared_view.step(client)
    assert (_queue(fresh, "fra-h100-1"), _queue(fresh, "use-h100-1")) == (2, 1)


@pytest.fixture
def outage_view(engine_settings: Any, stream: str) -> Iterator[Runtime]:
    engine_settings.LOCUS_SHARED_VIEW_URL = f"redis://127.0.0.1:{OUTAGE_PORT}/3"
    engine_settings.LOCUS_SHARED_VIEW_BATCH_MS = 5.0
    reset_runtime()
    yield runtime()
    reset_runtime()


def _until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("redis-server"), reason="needs the redis-server binary")
def test_with_redis_down_decisions_continue_and_it_rejoins(
    db: Any, outage_view: Runtime, client_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from console.inventory.services import topology_import
    from optimizer.topology_files import parse_topology

    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", OUTAGE_PORT)) != 0, "the outage port is taken"
    topology_import(topology=parse_topology(MIXED_FLEET))
    rt = outage_view
    rt.refresh()
    view = rt.shared_view
    assert view is not None
    caplog.set_level(logging.INFO, logger="console.placement.engine.sharedview")
    view.start()
    _until(lambda: not view.up)
    service, anonymous = client_for("service"), client_for(None)
    for _ in range(5):
        assert service.post("/api/v1/placements", SMALL_REQUEST, format="json").status_code == 200
    assert "locus_shared_view_up 0.0" in anonymous.get("/metrics").content.decode()
    assert "shared live view (Redis) unavailable" in caplog.text

    server = subprocess.Popen(
        ["redis-server", "--port", str(OUTAGE_PORT), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        _until(lambda: view.up)
        assert "shared live view (Redis) recovered" in caplog.text
        assert "locus_shared_view_up 1.0" in anonymous.get("/metrics").content.decode()
        assert service.post("/api/v1/placements", SMALL_REQUEST, format="json").status_code == 200
        _until(lambda: view.published >= 1)  # what waited went out once Redis answered
    finally:
        view.stop()
        server.terminate()
        server.wait(10)


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="a Linux scheduling policy")
def test_the_views_threads_yield_to_the_deciding_thread(stream: str) -> None:
    """Its threads run SCHED_BATCH, so the publisher a decision wakes does not preempt it;
    the thread that started them keeps its own policy."""
    view = SharedView(url=REDIS_URL, apply=lambda sends: len(sends), stream=stream).start()
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            policies = {os.sched_getscheduler(t.native_id or 0) for t in view._threads}
            if policies == {os.SCHED_BATCH}:
                break
            time.sleep(0.01)
        assert policies == {os.SCHED_BATCH}
        assert os.sched_getscheduler(0) != os.SCHED_BATCH
    finally:
        view.stop()
