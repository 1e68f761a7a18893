"""Gateway endpoints (`ip:port`) to inventory nodes and back (docs/gateway.md, "Pods and
nodes"): a node is routable by the picker once it has an `address`."""

from __future__ import annotations

import threading

from optimizer.topology import Topology

_cache: tuple[Topology, dict[str, str], dict[str, str], frozenset[str]] | None = None
_lock = threading.Lock()


def endpoint_map(
    topology: Topology,
) -> tuple[dict[str, str], dict[str, str], frozenset[str]]:
    """(address -> node name, node name -> address, the routable nodes) for the nodes with an
    address; built once per topology (a snapshot keeps its topology until the inventory
    changes)."""
    global _cache
    cached = _cache
    if cached is not None and cached[0] is topology:
        return cached[1], cached[2], cached[3]
    by_node = {n.name: n.address for n in topology.nodes if n.address is not None}
    by_address = {address: name for name, address in by_node.items()}
    with _lock:
        _cache = (topology, by_address, by_node, frozenset(by_node))
    return by_address, by_node, frozenset(by_node)
