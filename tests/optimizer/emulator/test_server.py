"""FleetServer's setup checks, and a start that fails leaving nothing open."""

from __future__ import annotations

import copy
import socket

import pytest
import requests
import yaml

from optimizer.emulator import FleetServer, FleetThread
from optimizer.topology_files import parse_topology
from tests.optimizer.fleets import TINY, tiny_topology


def test_a_truth_must_describe_the_same_nodes() -> None:
    other = copy.deepcopy(TINY)
    other["nodes"][0]["gpus"] = 2
    truth = parse_topology(yaml.safe_dump(other), "truth.yaml")
    with pytest.raises(ValueError, match="edge-s"):
        FleetServer(tiny_topology(), truth=truth, port_base=0)


def test_the_default_source_must_exist_and_ports_must_fit() -> None:
    with pytest.raises(ValueError, match="nobody"):
        FleetServer(tiny_topology(), source="nobody", port_base=0)
    with pytest.raises(ValueError, match="port-base"):
        FleetServer(tiny_topology(), port_base=65534)
    assert FleetServer(tiny_topology(), port_base=0).default == ("app", "a-edge")
    no_sources = tiny_topology(sources=[])
    assert FleetServer(no_sources, port_base=0).default == (None, "a-edge")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_start_that_cannot_listen_closes_what_it_opened() -> None:
    free = _free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        data = copy.deepcopy(TINY)
        data["nodes"] = data["nodes"][:2]
        data["nodes"][0]["address"] = f"127.0.0.1:{free}"
        data["nodes"][1]["address"] = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(OSError):
            FleetThread(parse_topology(yaml.safe_dump(data), "t.yaml")).start()
    with socket.socket() as again:
        again.bind(("127.0.0.1", free))  # the first node's listener was closed


def test_each_node_answers_at_its_own_address_whatever_the_truths_order() -> None:
    """The console's inventory lists nodes by name, the truth file in its own order: each
    listener still serves its own node (named in `x-locus-node` on every answer)."""
    reordered = copy.deepcopy(TINY)
    reordered["nodes"].reverse()
    truth = parse_topology(yaml.safe_dump(reordered), "truth.yaml")
    topology = tiny_topology()
    with FleetThread(topology, truth=truth, port_base=0) as fleet:
        for node in topology.nodes:
            answer = requests.get(fleet.urls[node.name] + "/v1/models", timeout=5)
            assert answer.headers["x-locus-node"] == node.name
