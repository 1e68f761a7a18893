"""`manage.py demo_fleet` serves the inventory's nodes as emulated endpoints at their addresses
and sends the trace through the router as the demo's service key: every call is decided by the
router, forwarded to an emulated node, and its outcome recorded by the router itself (the
client never reports one); the nodes' `/metrics`, which demo_prepare points telemetry at, are
vLLM's and Locus's scraper reads them."""

from __future__ import annotations

import copy
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from console.access.keyring import digest_of, keyring
from console.access.models import ApiKey
from console.inventory.models import Node
from console.inventory.selectors import inventory_topology
from console.inventory.services import topology_import
from console.placement.doors.router.app import RouterServer
from console.placement.engine.runtime import Runtime, runtime
from console.placement.models import DecisionRecord
from optimizer.emulator import FleetThread
from optimizer.topology_files import parse_topology
from telemetry.scraping import scrape_target
from telemetry.selectors import latest_node_state
from tests.console.placement.conftest import engine_settings  # noqa: F401 (a fixture)
from tests.console.placement.doors.router.conftest import FLEET, eventually

pytestmark = pytest.mark.django_db
CALLS = 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _demo_like_fleet() -> dict[str, Any]:
    """The router tests' m1 nodes, each at a free address, and its `app` source."""
    data = copy.deepcopy(FLEET)
    data["models"] = [m for m in data["models"] if m["name"] == "m1"]
    data["profiles"] = [p for p in data["profiles"] if p["model"] == "m1"]
    data["nodes"] = [n for n in data["nodes"] if n["models"] == ["m1"]]
    for node in data["nodes"]:
        node["address"] = f"127.0.0.1:{_free_port()}"
    return data


@pytest.fixture
def inventory(db: Any, engine_settings: Any, settings: Any, tmp_path: Path) -> Runtime:  # noqa: F811
    settings.VAR_DIR = tmp_path / "var"
    settings.LOCUS_ROUTER_OPEN = False
    topology_import(topology=parse_topology(yaml.safe_dump(_demo_like_fleet())))
    call_command("demo_prepare", "--no-training", "--no-calibration", "--no-signin")
    # The demo key in the key ring: the router's thread then never reads the test's database.
    keyring.reset()
    secret = (settings.VAR_DIR / "demo" / "service-key").read_text().strip()
    assert keyring.lookup(digest_of(secret)) is not None
    rt = runtime()
    rt.refresh()
    return rt


@pytest.fixture
def router(inventory: Runtime) -> Iterator[RouterServer]:
    server = RouterServer(port=0).start()
    yield server
    server.stop()


def _trace(tmp_path: Path) -> Path:
    """CALLS arrivals 50 ms apart, pairs sharing their first block."""
    lines = [
        {
            "timestamp": 50 * i,
            "input_length": 700,
            "output_length": 3,
            "hash_ids": [i // 2, 100 + i],
        }
        for i in range(CALLS)
    ]
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_demo_traffic_goes_through_the_router_as_the_demo_key(
    router: RouterServer, inventory: Runtime, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command(
        "demo_fleet",
        "--trace",
        str(_trace(tmp_path)),
        "--hours",
        "0.0001",  # one pass of the trace
        "--truth",
        "",
        "--router-url",
        router.url,
    )
    assert f"{CALLS} sent, {CALLS} answered" in capsys.readouterr().out

    def all_recorded() -> bool:
        inventory.recorder.flush()
        return DecisionRecord.objects.filter(ok__isnull=False).count() == CALLS

    eventually(all_recorded)
    demo_key = ApiKey.objects.get(name__startswith="demo-traffic-")
    for record in DecisionRecord.objects.all():
        assert record.decided_by == f"key:{demo_key.name}"
        assert record.source == "app"
        assert record.ok is True
        assert record.ttft_ms is not None and record.e2e_ms is not None
        assert 0 < record.ttft_ms <= record.e2e_ms
        assert record.prompt_tokens >= 700  # the prompt's text, as the router counted it


def test_the_console_scrapes_the_emulated_nodes_metrics(
    inventory: Runtime, django_capture_on_commit_callbacks: Any
) -> None:
    """demo_prepare points each node's telemetry at its address's `/metrics`, where the
    emulated node (served as demo_fleet serves it) answers in vLLM's format."""
    nodes = list(Node.objects.order_by("name"))
    assert [n.exporter_urls for n in nodes] == [[f"http://{n.address}/metrics"] for n in nodes]
    with FleetThread(inventory_topology()), django_capture_on_commit_callbacks(execute=True):
        for node in nodes:
            assert scrape_target(node=node.name, url=node.exporter_urls[0]).status == "ok"
    for node in nodes:
        seen = latest_node_state(node.name)
        assert seen is not None
        assert (seen.running, seen.queue_depth, seen.kv_usage) == (0, 0, 0.0)
