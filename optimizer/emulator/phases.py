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
"""

from __future__ import annotations

from typing import Any

from optimizer.emulator.engine import EmulatedFleet
from optimizer.emulator.openai import ApiError, Ask

PREFILLER_HEADER = "x-prefiller-host-port"


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


def handed_off(node_name: str) -> dict[str, Any]:
    """A prefill answer's `kv_transfer_params`: the decode side pulls the blocks from here."""
    return {
        "do_remote_decode": False,
        "do_remote_prefill": True,
        "remote_engine_id": node_name,
        "remote_block_ids": [],
        "remote_host": None,
        "remote_port": None,
    }
