"""Scheduled scraping: a real node_exporter on loopback, timeouts and per-target backoff."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from console.inventory.models import Node
from telemetry.scraping import scrape_target
from telemetry.selectors import latest_node_state
from telemetry.tasks import scrape_all

pytestmark = pytest.mark.django_db
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def node_exporter() -> Iterator[str]:
    if NODE_EXPORTER is None:
        pytest.skip(
            "prometheus-node-exporter is not installed (Debian: apt-get install "
            "prometheus-node-exporter)"
        )
    url = f"http://127.0.0.1:{_free_port()}/metrics"
    address = url.removeprefix("http://").removesuffix("/metrics")
    proc = subprocess.Popen(  # noqa: S603 - a fixed binary and arguments
        [NODE_EXPORTER, f"--web.listen-address={address}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if requests.get(url, timeout=1).ok:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("node_exporter did not answer within 10 s")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_real_node_exporter_is_scraped_and_its_series_served(
    fleet: Any, node_exporter: str, django_capture_on_commit_callbacks: Any, client_for: Any
) -> None:
    Node.objects.filter(name="muc-l4-1").update(exporter_urls=[node_exporter])
    with django_capture_on_commit_callbacks(execute=True):
        assert scrape_all.delay().get() == 1
    viewer = client_for("viewer")
    names = viewer.get("/api/v1/nodes/muc-l4-1/telemetry").json()["metrics"]
    assert "node_memory_MemAvailable_bytes" in names and "node_cpu_seconds_total" in names
    mem = viewer.get(
        "/api/v1/nodes/muc-l4-1/telemetry", {"metric": "node_memory_MemAvailable_bytes"}
    ).json()["series"]
    assert mem[0]["points"][0][1] > 0
    state = latest_node_state("muc-l4-1")
    assert state is not None
    assert state.mem_total_bytes and state.mem_total_bytes >= state.mem_available_bytes  # type: ignore[operator]
    assert state.cpu_util is not None and 0 <= state.cpu_util <= 1


def test_a_dead_target_backs_off_and_a_success_resets_it(fleet: Any, settings: Any) -> None:
    settings.LOCUS_TELEMETRY_SCRAPE_TIMEOUT_SECONDS = 0.5
    url = f"http://127.0.0.1:{_free_port()}/metrics"  # nothing listens there
    first = scrape_target(node="muc-l4-1", url=url, now=1000.0)
    assert first.status == "failed"
    assert scrape_target(node="muc-l4-1", url=url, now=1001.0).status == "backoff"
    # interval 10 s x 2^0 (+-20% jitter) later it is tried again, and fails again
    assert scrape_target(node="muc-l4-1", url=url, now=1013.0).status == "failed"
    # now 20 s (+-20%): still backing off 15 s later
    assert scrape_target(node="muc-l4-1", url=url, now=1028.0).status == "backoff"
