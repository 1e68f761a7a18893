"""Fixtures for the router: an emulated fleet serving real HTTP, the same fleet in the
inventory with the emulated endpoints as its nodes' addresses, the engine refreshed on it, and
the router serving in a thread of the test process."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
import yaml

from console.access.keyring import digest_of, keyring
from console.placement.doors.router.app import RouterServer
from console.placement.engine.runtime import Runtime, runtime
from console.placement.models import DecisionRecord
from optimizer.emulator import FleetThread
from optimizer.topology_files import parse_topology

# Two EU nodes for m1 at one site, and the only m2 node in the US (so an interactive, EU-only
# call for m2 has no eligible node). Prefill is fast; a decode step takes 40 ms, far longer
# than the event loop's late wakes (docs/emulator.md, "Accuracy"), so each token is its own
# chunk and two calls to one node stream the same bytes.
FLEET: dict[str, Any] = {
    "version": 1,
    "sites": [
        {"name": "here", "tier": "regional", "region": "eu", "jurisdiction": "EU"},
        {"name": "far", "tier": "cloud", "region": "us", "jurisdiction": "US"},
    ],
    "links": [{"a": "here", "b": "far", "rtt_ms": 20, "bandwidth_gbps": 10}],
    "intra_site_rtt_ms": 0.5,
    "accelerators": [{"name": "big", "memory_gib": 80}],
    "models": [
        {"name": "m1", "memory_gib": 16, "kv_bytes_per_token": 1000},
        {"name": "m2", "memory_gib": 16, "kv_bytes_per_token": 1000},
    ],
    "profiles": [
        {
            "model": m,
            "accelerator": "big",
            "prefill_tokens_per_s": 100_000,
            "decode_step_ms": 40,
            "decode_step_ms_per_seq": 0.1,
            "max_batch": 64,
        }
        for m in ("m1", "m2")
    ],  # fmt: skip
    "nodes": [
        {"name": "n1", "site": "here", "accelerator": "big", "usd_per_hour": 1.0, "models": ["m1"]},
        {"name": "n2", "site": "here", "accelerator": "big", "usd_per_hour": 1.0, "models": ["m1"]},
        {"name": "us1", "site": "far", "accelerator": "big", "usd_per_hour": 1.0, "models": ["m2"]},
    ],
    "sources": [{"name": "app", "site": "here", "share": 1.0, "slo": "interactive"}],
    "slos": [{"name": "interactive", "ttft_p95_ms": 5000, "e2e_p95_ms": 30000, "residency": "EU"}],
}


@pytest.fixture
def down_nodes() -> tuple[str, ...]:
    """Nodes the emulated fleet serves as `down` (503 to every call; the inventory still
    has them active). A test parametrizes this to change it."""
    return ()


@pytest.fixture
def emulated(down_nodes: tuple[str, ...]) -> Iterator[FleetThread]:
    """FLEET's nodes as emulated endpoints on ephemeral ports (a fresh fleet per test: tests
    stop nodes)."""
    data = copy.deepcopy(FLEET)
    for node in data["nodes"]:
        if node["name"] in down_nodes:
            node["state"] = "down"
    with FleetThread(parse_topology(yaml.safe_dump(data)), port_base=0) as fleet:
        yield fleet


@pytest.fixture
def fleet(db: Any, engine_settings: Any, emulated: FleetThread) -> Runtime:
    """The inventory holds FLEET with each node's address its emulated endpoint."""
    from console.inventory.services import topology_import

    data = copy.deepcopy(FLEET)
    for node in data["nodes"]:
        node["address"] = emulated.urls[node["name"]].removeprefix("http://")
    topology_import(topology=parse_topology(yaml.safe_dump(data)))
    rt = runtime()
    rt.refresh()
    return rt


@pytest.fixture
def router(fleet: Runtime, settings: Any) -> Iterator[RouterServer]:
    """The router on a free port, for the `app` source by default."""
    settings.LOCUS_ROUTER_OPEN = False
    server = RouterServer(port=0, source="app").start()
    yield server
    server.stop()


@pytest.fixture
def service_key(db: Any) -> str:
    """A service key, already in the key ring (the router thread then never reads the test's
    database)."""
    from console.access.services import api_key_create

    secret = api_key_create(name="router-client", role="service").secret
    keyring.reset()
    assert keyring.lookup(digest_of(secret)) is not None
    return secret


@pytest.fixture
def post(router: RouterServer, service_key: str) -> Callable[..., requests.Response]:
    """POST a JSON body to the router as the service key's holder."""

    def send(path: str, body: Any, **options: Any) -> requests.Response:
        headers = {"Authorization": f"Bearer {service_key}", **options.pop("headers", {})}
        return requests.post(router.url + path, json=body, headers=headers, timeout=10, **options)

    return send


def eventually(check: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Until `check()` holds: the router records an outcome just after the answer's last
    byte leaves, so a client can read the end a moment before the record is made."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.01)


def recorded(rt: Runtime, decision_id: str) -> DecisionRecord:
    """The decision's record once its outcome is written (the router thread reports it, the
    test's thread writes what the recorder holds)."""

    def written() -> bool:
        rt.recorder.flush()
        return DecisionRecord.objects.filter(pk=decision_id, ok__isnull=False).exists()

    eventually(written)
    return DecisionRecord.objects.get(pk=decision_id)
