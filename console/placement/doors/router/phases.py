"""A split decision's two phases, run by the router itself (issue #30; docs/router.md,
"Split decisions").

As vLLM production-stack's router does in its orchestrated disaggregated-prefill mode
(`route_orchestrated_disaggregated_request`, vllm-project/production-stack
`src/vllm_router/services/request_service/request.py`, after NxDI's `toy_proxy_server.py`):
1. the request goes to the prefill node with `max_tokens` (and `max_completion_tokens` when
   sent) 1, `stream` off, `stream_options` dropped and `kv_transfer_params` asking for a
   remote decode;
2. the prefill node's answer carries `kv_transfer_params` (where its KV blocks are); the
   router sets their `remote_host` to the prefill node's host and adds them to the client's
   own body;
3. that body goes to the decode node, whose answer is the client's.

Where production-stack answers a failed prefill with the prefill's error, Locus sends the
client's body unchanged to the decode node (and its fallbacks), which then runs both phases:
a request is not lost to a prefill node the decode node can stand in for. The prefill node's
breaker counts the failure (`Outcomes.record`'s `prefill_ok`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

# What the prefill request asks of a vLLM prefill instance (production-stack's values).
REMOTE_DECODE = {
    "do_remote_decode": True,
    "do_remote_prefill": False,
    "remote_engine_id": None,
    "remote_block_ids": None,
    "remote_host": None,
    "remote_port": None,
}


@dataclass
class Prefilled:
    """The prefill phase's result: `ok`, and the decode node's body (the client's own, with
    the KV's whereabouts when the prefill node gave them)."""

    ok: bool
    body: bytes
    error: str = ""


def prefill_body(body: bytes) -> bytes:
    """The prefill node's request: one output token, not streamed, asking for a remote
    decode."""
    data = orjson.loads(body)
    data["max_tokens"] = 1
    if "max_completion_tokens" in data:
        data["max_completion_tokens"] = 1
    data["stream"] = False
    data.pop("stream_options", None)
    data["kv_transfer_params"] = dict(REMOTE_DECODE)
    return orjson.dumps(data)


def decode_body(body: bytes, params: Any, prefill_address: str) -> bytes:
    """The client's body with the prefill's `kv_transfer_params`, `remote_host` set to the
    prefill node's host (an IPv6 host without its brackets); the body unchanged when the
    prefill node returned none (the decode node then prefills itself)."""
    if not isinstance(params, dict) or not params:
        return body
    host = prefill_address.rpartition(":")[0].strip("[]")
    data = orjson.loads(body)
    data["kv_transfer_params"] = {**params, "remote_host": host}
    return orjson.dumps(data)


async def run_prefill(
    session: aiohttp.ClientSession,
    path: str,
    body: bytes,
    address: str,
    headers: Mapping[str, str],
) -> Prefilled:
    """Prefill on `address`; on any failure, the client's body for a decode node that runs
    both phases."""
    try:
        async with session.post(
            f"http://{address}{path}", data=prefill_body(body), headers=dict(headers)
        ) as response:
            if response.status != 200:
                return Prefilled(False, body, f"HTTP {response.status}")
            answer = orjson.loads(await response.read())
    except (TimeoutError, aiohttp.ClientError, OSError, orjson.JSONDecodeError) as exc:
        return Prefilled(False, body, f"{type(exc).__name__}: {exc}"[:300])
    params = answer.get("kv_transfer_params") if isinstance(answer, dict) else None
    return Prefilled(True, decode_body(body, params, address))
