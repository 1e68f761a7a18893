"""Gateway endpoints (`ip:port`) to inventory nodes and back (docs/gateway.md, "Pods and
nodes"): a node is routable by the picker once it has an `address`."""

from __future__ import annotations

import threading
from typing import Any

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


def within_subset(subset: Any, by_address: dict[str, str]) -> tuple[frozenset[str], dict[str, str]]:
    """The routable nodes within the subset hint Envoy sent, and the subset's endpoints Locus
    does not know, with a reason.

    As the reference picker reads it (gateway-api-inference-extension
    `pkg/lwepp/handlers/request.go`): a list of strings or one string, each possibly
    comma-separated, and an entry without a port matches every endpoint of that IP."""
    entries = subset if isinstance(subset, list) else [subset]
    wanted = [
        piece.strip()
        for entry in entries
        if isinstance(entry, str)
        for piece in entry.split(",")
        if piece.strip()
    ]
    among: set[str] = set()
    unknown: dict[str, str] = {}
    for entry in wanted:
        if entry in by_address:
            among.add(by_address[entry])
            continue
        hosts = [n for a, n in by_address.items() if a.rpartition(":")[0] == entry]
        if hosts:
            among.update(hosts)
        else:
            unknown[entry] = "unknown_endpoint"
    return frozenset(among), unknown
