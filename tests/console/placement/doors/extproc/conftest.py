"""Fixtures for the endpoint picker: a fleet whose nodes have addresses, the engine refreshed
on it, and the picker serving on free ports."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
import yaml

from console.placement.doors.extproc.server import PickerServer
from console.placement.engine.runtime import Runtime, runtime
from tests.console.placement.conftest import MIXED_FLEET
from tests.console.placement.doors.extproc.envoy_client import EnvoyStream


def address_of(index: int) -> str:
    return f"10.0.0.{index + 1}:8000"


def fleet_with_addresses() -> tuple[str, dict[str, str]]:
    """The placement tests' mixed fleet (a node for every rejection reason), every node with
    an address; and node name -> address."""
    data = yaml.safe_load(MIXED_FLEET)
    addresses = {}
    for index, node in enumerate(data["nodes"]):
        node["address"] = addresses[node["name"]] = address_of(index)
    return yaml.safe_dump(data), addresses


@pytest.fixture
def addresses() -> dict[str, str]:
    return fleet_with_addresses()[1]


@pytest.fixture
def gateway_fleet(db: Any, engine_settings: Any) -> Runtime:
    from console.inventory.services import topology_import
    from optimizer.topology_files import parse_topology

    topology_import(topology=parse_topology(fleet_with_addresses()[0]))
    rt = runtime()
    rt.refresh()
    return rt


@pytest.fixture
def picker_server(engine_settings: Any) -> Iterator[PickerServer]:
    server = PickerServer(port=0, health_port=0, source="munich-app", host="127.0.0.1").start()
    yield server
    server.stop()


@pytest.fixture
def channel(picker_server: PickerServer) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(f"127.0.0.1:{picker_server.bound_port}") as ch:
        yield ch


@pytest.fixture
def envoy(gateway_fleet: Runtime, channel: grpc.Channel) -> Callable[[], EnvoyStream]:
    """A new ext_proc stream to a picker serving the munich-app source."""
    return lambda: EnvoyStream(channel)
