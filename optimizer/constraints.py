"""Hard constraints (docs/contracts.md §1), applied before any policy so no policy can break them.

A node can serve a request only if it runs the requested model, is not down, draining or
cordoned, lies in the request's residency jurisdiction, is reachable from the request's site,
and could hold the whole sequence in its KV memory. The last check is about capacity, not
current occupancy: a node that is merely busy queues the request (the simulator's queueing
and the live engine's load scores handle that), while a sequence longer than the node's whole
KV room could never run there.

`rejection_reason` is the per-node definition; decisions apply the same constraints, with the
same reasons and precedence, on columns (`optimizer.decide.state.fleet`,
`optimizer.decide.filters.constraints`).
"""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.fleet import (
    REASON_MODEL_NOT_SERVED,
    REASON_NO_KV_ROOM,
    REASON_NODE_CORDONED,
    REASON_NODE_DOWN,
    REASON_NODE_DRAINING,
    REASON_RESIDENCY,
    REASON_UNREACHABLE,
)
from optimizer.decision import NodeView
from optimizer.topology import Topology

_STATE_REASONS = {
    "down": REASON_NODE_DOWN,
    "draining": REASON_NODE_DRAINING,
    "cordoned": REASON_NODE_CORDONED,
}


def sequence_kv_bytes(request: PlacementRequest, node: NodeView) -> int:
    """KV bytes the request's whole sequence (prompt plus all output) holds on `node`."""
    return (request.prompt_tokens + request.max_output_tokens) * node.kv_bytes_per_token


def rejection_reason(request: PlacementRequest, node: NodeView, topology: Topology) -> str | None:
    """Why `node` may not serve `request`, or None when it may."""
    if node.max_batch <= 0 or request.model not in node.models:
        return REASON_MODEL_NOT_SERVED
    state_reason = _STATE_REASONS.get(node.state)
    if state_reason is not None:
        return state_reason
    if request.residency is not None and node.jurisdiction != request.residency:
        return REASON_RESIDENCY
    if (request.source_site, node.site) not in topology.routes:
        return REASON_UNREACHABLE
    if sequence_kv_bytes(request, node) > node.kv_capacity_bytes:
        return REASON_NO_KV_ROOM
    return None


def filter_candidates(
    request: PlacementRequest, nodes: Sequence[NodeView], topology: Topology
) -> tuple[list[NodeView], dict[str, str]]:
    """Split `nodes` into the candidates that may serve `request` (in the given order) and
    the rejected ones, each with the first reason that rules it out."""
    candidates: list[NodeView] = []
    rejected: dict[str, str] = {}
    for node in nodes:
        reason = rejection_reason(request, node, topology)
        if reason is None:
            candidates.append(node)
        else:
            rejected[node.name] = reason
    return candidates, rejected
