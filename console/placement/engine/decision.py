"""The engine's answer (`Decision`), and what a split answer adds to it (issue #30)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from optimizer.decide.framework import Pair
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.snapshot import PolicyRef, Snapshot


@dataclass
class Decision:
    """The engine's answer; `node` is None when no node may serve the request."""

    decision_id: str
    request: PlacementRequest
    node: str | None
    site: str | None
    fallbacks: list[str]
    policy: PolicyRef
    arm: str
    rejected: dict[str, str]
    # The engine's wall time, of it the thread's CPU time (time.thread_time) and the wait for
    # the engine's lock: what tells a slow decision's own work from time it spent not running.
    latency_us: float = 0.0
    cpu_us: float = 0.0
    lock_wait_us: float = 0.0
    degraded: str = ""
    candidates: list[dict[str, Any]] = field(default_factory=list)
    shadow: dict[str, Any] | None = None
    session_id: str | None = None
    caller: str = ""
    # The best RECEIPT_CANDIDATES candidates in the receipt's compact form (receipts.py).
    top: list[dict[str, Any]] = field(default_factory=list)
    # What a learned scorer's trust region did (`optimizer.decide.explain.guard_note`).
    guard: dict[str, Any] | None = None
    # Why a trained scorer preferred the pick, when sampled or asked (learned_why.py).
    learned: dict[str, Any] | None = None
    # A split decision (issue #30): `node` decodes, `prefill_node` prefills; None when `node`
    # runs both phases. Fallbacks are pairs: `prefill_fallbacks[i]` prefills for
    # `fallbacks[i]` (None: that fallback runs both), empty when no pair is split.
    prefill_node: str | None = None
    prefill_site: str | None = None
    prefill_address: str | None = None
    prefill_fallbacks: list[str | None] = field(default_factory=list)
    # Why split, for the receipt (receipts.py): the transfer and the one-node alternative.
    split: dict[str, Any] | None = None
    # An exploration probe's answer (probing.py; docs/twin.md): its id, node, the policy's
    # own pick and the estimate that let it; None for the policy's answers.
    probe: dict[str, Any] | None = None


def timed(decision: Decision, start: float, cpu0: float, waited: float) -> Decision:
    """`decision` with the engine's wall time since `start` (`time.perf_counter`), of it the
    thread's CPU time since `cpu0` (`time.thread_time`) and the `waited` seconds for the
    engine's lock."""
    decision.latency_us = (time.perf_counter() - start) * 1e6
    decision.cpu_us = (time.thread_time() - cpu0) * 1e6
    decision.lock_wait_us = waited * 1e6
    return decision


def add_split(decision: Decision, pairs: list[Pair], names: list[str], snap: Snapshot) -> None:
    """A split answer's prefill nodes on `decision`, and the receipt's why (`Split.explain`:
    the KV bytes, their transfer over the link, the pair's and the best one-node TTFT)."""
    pick = pairs[0]
    prefills = [None if p.prefill is None else names[p.prefill] for p in pairs]
    decision.prefill_fallbacks = prefills[1:]
    if pick.prefill is None or pick.split is None:
        return
    node = snap.topology.node_by_name[names[pick.prefill]]
    decision.prefill_node, decision.prefill_site = node.name, node.site
    decision.prefill_address = node.address
    decision.split = {"prefill_node": node.name, "prefill_site": node.site}
    decision.split.update(pick.split.explain())
