"""The picker's Prometheus endpoint: its decisions in the engine's metrics, and its own
overhead."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from console.placement.doors.extproc.server import PickerServer
from tests.console.placement.doors.extproc.envoy_client import (
    EnvoyStream,
    endpoints_of,
    request_body,
    request_headers,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_metrics(gateway_fleet: Any) -> Iterator[PickerServer]:
    server = PickerServer(
        port=0, health_port=0, source="munich-app", host="127.0.0.1", metrics_port=0
    ).start()
    yield server
    server.stop()


def _scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def test_the_metrics_endpoint_counts_picker_decisions(
    with_metrics: PickerServer, addresses: dict[str, str]
) -> None:
    before = _scrape(with_metrics.bound_metrics_port)
    with grpc.insecure_channel(f"127.0.0.1:{with_metrics.bound_port}") as channel:
        stream = EnvoyStream(channel)
        body = {"model": "llama-3.1-8b", "prompt": "Hi"}
        stream.send(
            request_headers("/v1/completions"),
            request_body(json.dumps(body).encode(), end_of_stream=True),
        )
        pick = endpoints_of(stream.recv(2)[0])[0][0]
        stream.close()
    node = next(n for n, a in addresses.items() if a == pick)
    after = _scrape(with_metrics.bound_metrics_port)
    counted = f'locus_decisions_total{{node="{node}",policy="weighted-score@builtin"}}'
    assert after[counted] == before.get(counted, 0) + 1
    assert after["locus_picker_seconds_count"] == before.get("locus_picker_seconds_count", 0) + 1
