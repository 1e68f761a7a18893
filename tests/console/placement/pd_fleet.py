"""A small P/D fleet for the console's split-decision tests (issue #30): the optimizer tests'
`pd_topology` (a prefill and a decode node in the EU core, a decode and a mixed node at the
edge, a prefill node in the US cloud), every node with an address."""

from __future__ import annotations

from typing import Any

import yaml

from console.placement.engine.runtime import Runtime, runtime
from optimizer.topology import Topology
from optimizer.topology_files import parse_topology
from tests.optimizer.fleets import PD_NODES, TINY

# 10,000 tokens: 5 s of prefill on the edge's small mixed node, 1 s on the core's big one.
LONG = 10_000
SPLIT_BODY = {
    "model": "m1",
    "source": "app",
    "slo": "eu-only",
    "prompt_tokens": LONG,
    "max_output_tokens": 50,
}


def pd_yaml(addresses: dict[str, str] | None = None) -> str:
    """The fleet as a topology file; `addresses` (node -> ip:port) default to 10.0.0.i:8000."""
    data: dict[str, Any] = {**TINY, "nodes": [dict(n) for n in PD_NODES]}
    for index, node in enumerate(data["nodes"]):
        node["address"] = (addresses or {}).get(node["name"], f"10.0.0.{index + 1}:8000")
    return yaml.safe_dump(data)


def install(addresses: dict[str, str] | None = None) -> tuple[Topology, Runtime]:
    """Import the fleet into the inventory and refresh the engine on it."""
    from console.inventory.services import topology_import

    topology = parse_topology(pd_yaml(addresses))
    topology_import(topology=topology)
    rt = runtime()
    rt.refresh()
    return topology, rt
