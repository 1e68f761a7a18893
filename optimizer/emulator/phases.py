"""Prefill and decode on emulated nodes (issue #30): what a vLLM P/D pair does, modelled.

- A prefill request, one whose `kv_transfer_params` ask for a remote decode (what vLLM
  production-stack's orchestrated router sends, docs/router.md "Split decisions"), runs on
  its node as any request (the router asks for one token) and its answer carries
  `kv_transfer_params` naming this node as `remote_engine_id`, as a vLLM prefill instance's
  answer names its engine and blocks.
- A decode request names where its prompt's KV is: `kv_transfer_params.remote_engine_id`
  (the router's way) or the `x-prefiller-host-port` header (llm-d's routing sidecar's way,
  docs/gateway.md; the sidecar itself calls that node's prefill first, so this module does
  it for the sidecar). Its node admits it prefilled once the KV has crossed the link between
  the two sites (`EmulatedFleet.kv_transfer_s`), as the simulator's decode node does.

A node's `role` is honoured: a `prefill` node answers a request that does not ask for a
remote decode with 400 (it serves no decode), and a `decode` node one that brings no KV
(it runs no prefill); `mixed` nodes take all three kinds.

The request log (`--requests-out`) has one line per request, as the simulator's has: a split
request's is its decode phase's, naming its `prefill_node`, from the arrival of its prefill
phase. The router's two calls are joined by `HANDOFF_KEY`, which the prefill's answer adds
to `kv_transfer_params` and the router hands on to the decode node with the rest (`Handoffs`).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any

from optimizer.emulator.engine import EmulatedFleet
from optimizer.emulator.openai import ApiError, Ask

PREFILLER_HEADER = "x-prefiller-host-port"
# The emulator's own key in a prefill answer's `kv_transfer_params` (vLLM's connectors read
# only theirs): which prefill a decode request continues, for the request log.
HANDOFF_KEY = "locus_handoff_id"
# Prefills kept waiting for their decode request; the oldest is forgotten beyond this (a
# router that never sends the second call), and its decode's line then has no latencies.
MAX_PENDING_HANDOFFS = 10_000


class Handoffs:
    """The prefills handed off and not yet continued (the router's way): id -> (prefill node,
    model time the request arrived there)."""

    def __init__(self) -> None:
        self._pending: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self._ids = itertools.count(1)

    def add(self, node: int, arrival: float) -> str:
        handoff = f"h{next(self._ids)}"
        self._pending[handoff] = (node, arrival)
        if len(self._pending) > MAX_PENDING_HANDOFFS:
            self._pending.popitem(last=False)
        return handoff

    def take(self, ask: Ask, node: int) -> float | None:
        """The arrival of the prefill `ask` continues on `node` (None: not known here)."""
        handoff = (ask.kv_transfer or {}).get(HANDOFF_KEY)
        if not isinstance(handoff, str) or self._pending.get(handoff, (-1, 0.0))[0] != node:
            return None
        return self._pending.pop(handoff)[1]


def remote_decode(ask: Ask) -> bool:
    """The request is a prefill for another node's decode."""
    return bool(ask.kv_transfer and ask.kv_transfer.get("do_remote_decode"))


def prefill_node(fleet: EmulatedFleet, ask: Ask, header: str | None) -> tuple[int | None, bool]:
    """(the node holding the request's prompt KV, whether it is still to be prefilled
    there): from `kv_transfer_params` (already prefilled) or the prefiller header (not yet);
    (None, False) when the request brings no KV. ApiError(400) for a node it cannot name."""
    engine = (ask.kv_transfer or {}).get("remote_engine_id")
    if isinstance(engine, str) and engine and not remote_decode(ask):
        if engine not in fleet.fleet.index_of:
            raise ApiError(400, f"kv_transfer_params: no prefill engine {engine[:200]!r}.")
        return fleet.fleet.index_of[engine], False
    if header:
        address = header.split(",")[0].strip()  # the sidecar takes the first (llm-d)
        if address not in fleet.endpoints:
            raise ApiError(400, f"{PREFILLER_HEADER}: no node listens at {address[:200]!r}.")
        return fleet.endpoints[address], True
    return None, False


def check_role(role: str, ask: Ask, brings_kv: bool) -> None:
    """ApiError(400) for a request the node's role does not run."""
    if role == "prefill" and not remote_decode(ask):
        raise ApiError(400, "This node only prefills: send kv_transfer_params.do_remote_decode.")
    if role == "decode" and not brings_kv:
        raise ApiError(400, "This node only decodes: name the prefill node (kv_transfer_params).")


def handed_off(node_name: str, handoff: str) -> dict[str, Any]:
    """A prefill answer's `kv_transfer_params`: the decode side pulls the blocks from here."""
    return {
        "do_remote_decode": False,
        "do_remote_prefill": True,
        "remote_engine_id": node_name,
        "remote_block_ids": [],
        "remote_host": None,
        "remote_port": None,
        HANDOFF_KEY: handoff,
    }
