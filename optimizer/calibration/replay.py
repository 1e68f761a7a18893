"""Replay observations on the nodes they were actually sent to, and measure the twin's error.

The replay runs the ordinary simulator (`optimizer.sim`) through its step-able interface
(`Simulator.advance` and `send`), sending each arrival to its recorded node instead of asking
a policy (a split request, issue #30, to its recorded prefill node and decode node, so its KV
crosses the same link as it did), and rejecting the requests that were rejected. Every node
is taken as active: the inventory's state today is not the state the traffic met.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optimizer.decide.registry import get_policy
from optimizer.observations import Observations
from optimizer.sim.engine import SimResult, Simulator
from optimizer.sim.requests import REJECTED, SERVED
from optimizer.topology import Topology


def rebuilt(topology: Topology, **update: Any) -> Topology:
    """`topology` with fields replaced, validated afresh. Not `model_copy`: it would copy the
    cached lookups (`profile_by_key`, `node_by_name`, ...) of the old fleet along."""
    return Topology.model_validate(topology.model_copy(update=update).model_dump())


def all_active(topology: Topology) -> Topology:
    """The same fleet with every node active."""
    nodes = tuple(node.model_copy(update={"state": "active"}) for node in topology.nodes)
    return rebuilt(topology, nodes=nodes)


def replay(topology: Topology, observations: Observations) -> SimResult:
    """Replay `observations` with placement forced to the recorded node (pair)."""
    index = {node.name: i for i, node in enumerate(topology.nodes)}
    target = [None if name is None else index[name] for name in observations.node]
    prefill = [None if name is None else index[name] for name in observations.prefill_node]
    # The simulator needs a policy to re-place requests of failed nodes; a replay schedules no
    # failures, so it is never asked.
    policy = get_policy("round-robin", topology)
    sim = Simulator(topology, policy, observations.requests, observations.arrival_s)
    table = sim.table
    sim.start()
    while (rid := sim.advance()) is not None:
        node = target[rid]
        if node is None:
            table.status[rid] = REJECTED
            table.reject_reason[rid] = "observed"
            table.resolved.append(rid)
        else:
            sim.send(rid, node, sim.now, prefill[rid])
    return sim.result(0.0)


def predicted(result: SimResult) -> tuple[np.ndarray, np.ndarray]:
    """Per request the replay's TTFT and E2E in seconds (NaN where it did not serve)."""
    t = result.table
    served = np.array(t.status) == SERVED
    ttft = np.where(served, np.array(t.ttft), np.nan)
    e2e = np.where(served, np.array(t.e2e), np.nan)
    return ttft, e2e


def _errors(simulated: np.ndarray, observed: np.ndarray) -> dict[str, float]:
    rel = np.abs(simulated - observed) / observed
    rel = rel[np.isfinite(rel)]
    if rel.size == 0:
        return {"median_abs_rel_error": 0.0, "p95_abs_rel_error": 0.0}
    return {
        "median_abs_rel_error": float(np.median(rel)),
        "p95_abs_rel_error": float(np.percentile(rel, 95)),
    }


def fidelity(
    result: SimResult, observations: Observations, among: np.ndarray | None = None
) -> dict[str, Any]:
    """Median and p95 absolute relative error of per-request TTFT and E2E, over the measured
    requests with a positive latency (docs/contracts.md §5), of those in `among` if given."""
    ttft, e2e = predicted(result)
    use = observations.measured & (observations.ttft_s > 0)
    if among is not None:
        use &= among
    return {
        "ttft": _errors(ttft[use], observations.ttft_s[use]),
        "e2e": _errors(e2e[use], observations.e2e_s[use]),
    }


def mismatch(
    result: SimResult, observations: Observations, among: np.ndarray | None = None
) -> float:
    """Mean absolute relative error of TTFT plus that of E2E (of the requests in `among` if
    given): what a calibration step must lower to be accepted (means, not the medians of
    `fidelity`, so that a step improving only the tail still counts)."""
    ttft, e2e = predicted(result)
    use = observations.measured & (observations.ttft_s > 0)
    if among is not None:
        use &= among
    total = 0.0
    for sim, obs in ((ttft[use], observations.ttft_s[use]), (e2e[use], observations.e2e_s[use])):
        rel = np.abs(sim - obs) / obs
        rel = rel[np.isfinite(rel)]
        total += float(rel.mean()) if rel.size else 0.0
    return total
