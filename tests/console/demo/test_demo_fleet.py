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
from console.demo import fleet
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


def _trace(tmp_path: Path, calls: int = CALLS) -> Path:
    """`calls` arrivals 50 ms apart, pairs sharing their first block."""
    lines = [
        {
            "timestamp": 50 * i,
            "input_length": 700,
            "output_length": 3,
            "hash_ids": [i // 2, 100 + i],
        }
        for i in range(calls)
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


def _demo_fleet(router: RouterServer, trace: Path) -> None:
    call_command(
        "demo_fleet", "--trace", str(trace), "--hours", "0.0001", "--truth", "",
        "--router-url", router.url,
    )  # fmt: skip


def test_a_healthy_fleet_prints_nothing_after_its_start_so_the_sign_in_line_stays_last(
    router: RouterServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 28: after 15 minutes of `make run` the sign-in line had 15 "demo clients" lines
    under it. Checked every 0.3 s over a 1.5 s trace, all answered: no line until the stop."""
    monkeypatch.setattr(fleet, "REPORT_EVERY_S", 0.3)
    _demo_fleet(router, _trace(tmp_path, calls=30))
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "demo fleet stopped: 30 sent, 30 answered, other answers: none", out
    assert not [line for line in out if line.startswith("demo clients")], out


@pytest.mark.django_db(transaction=True)  # the router's thread looks the unknown key up
def test_calls_refused_are_reported_while_the_fleet_runs(
    router: RouterServer,
    settings: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A key the router does not know: no call is answered 2xx (401, or 503 once the key
    ring's misses per second are spent), and that is said as it runs."""
    monkeypatch.setattr(fleet, "REPORT_EVERY_S", 0.3)
    (settings.VAR_DIR / "demo" / "service-key").write_text("not-a-key\n")
    _demo_fleet(router, _trace(tmp_path, calls=30))
    out = capsys.readouterr().out.splitlines()
    reports = [line for line in out if line.startswith("demo clients")]
    assert reports, out
    assert not [line for line in reports if line.endswith("other answers: none")], reports
    assert out[-1].startswith("demo fleet stopped: 30 sent, 0 answered, other answers: 401:"), out


@pytest.mark.parametrize(
    ("before", "now", "troubled"),
    [
        ((10, 10, 0), (20, 20, 0), False),  # all answered
        ((10, 10, 0), (10, 10, 0), False),  # idle between arrivals
        ((10, 10, 0), (20, 10, 0), True),  # sent, none answered
        ((10, 10, 0), (20, 19, 1), True),  # one refused
        ((10, 9, 1), (20, 19, 1), False),  # an old refusal is not reported again
    ],
)
def test_trouble_is_a_refusal_or_a_stall_since_the_last_look(
    before: tuple[int, int, int], now: tuple[int, int, int], troubled: bool
) -> None:
    assert fleet._Seen(*now).troubled_since(fleet._Seen(*before)) is troubled


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
