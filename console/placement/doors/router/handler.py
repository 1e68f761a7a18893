"""One completion call, start to end: authenticate, read the body, decide, forward down the
pick and its fallbacks, relay the answer, record the outcome.

The decision runs on the event loop, without a thread hop: it is tens of microseconds of CPU
with no I/O (docs/architecture.md rule 2), cheaper than a hand-off to a worker thread, as the
REST fast path (`doors/fastpath.py`) and the ext_proc picker found.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp
from aiohttp import web

from console.placement.doors.endpoints import endpoint_map
from console.placement.doors.probe_header import PROBE_HEADER, probe_header
from console.placement.doors.router.auth import caller_of
from console.placement.doors.router.calls import Call, read_call
from console.placement.doors.router.errors import RouterError
from console.placement.doors.router.forwarding import (
    Forwarded,
    Upstream,
    node_headers,
    response_headers,
)
from console.placement.doors.router.limits import read_body, shed_if_saturated
from console.placement.doors.router.metrics import ROUTER_DISCONNECTS, ROUTER_SECONDS
from console.placement.doors.router.outcome import CallTimes, record
from console.placement.doors.router.phases import run_prefill
from console.placement.doors.router.streaming import SseRelay, usage_of
from console.placement.engine.inputs import UnknownName
from console.placement.engine.runtime import Decision, runtime

DECISION_HEADER = "x-locus-decision-id"
# Set on a request once its answer has started: an error past it cannot become an answer.
STREAMING = web.RequestKey("locus_streaming", bool)
NO_NODE_MESSAGE = "No node may serve this request."


class CompletionHandler:
    """Serves `/v1/completions` and `/v1/chat/completions` for one router process."""

    def __init__(self, upstream: Upstream, default_source: str | None) -> None:
        self.upstream = upstream
        self.default_source = default_source

    async def handle(self, request: web.Request) -> web.StreamResponse:
        received = time.monotonic()
        caller = await caller_of(request.headers.get("authorization"))
        raw = await read_body(request)
        started = time.perf_counter()
        call, decision, nodes = self._decide(request, raw, caller)
        ROUTER_SECONDS.observe(time.perf_counter() - started)
        times = CallTimes(received=received, decision_id=decision.decision_id, caller=caller)
        extra = {DECISION_HEADER: decision.decision_id}
        if decision.probe is not None:
            # An exploration probe answered (docs/router.md, "What comes back").
            extra[PROBE_HEADER] = probe_header(decision.probe)
        recorded = True
        forwarded: Forwarded | None = None
        try:
            source = call.decision.source
            assert source is not None
            body = call.body
            if decision.prefill_node is not None and decision.prefill_address is not None:
                # Split: prefill there first, then the decode nodes get the KV's whereabouts.
                prefilled = await run_prefill(
                    self.upstream.session(),
                    request.path,
                    body,
                    decision.prefill_address,
                    node_headers(request.headers, source),
                )
                body, times.prefill_ok = prefilled.body, prefilled.ok
            forwarded, times.attempts = await self.upstream.forward(
                request.path, body, nodes, request.headers, source
            )
            if forwarded is None:
                tried = {a.node: a.error for a in times.attempts}
                raise RouterError(
                    502, "No node could be reached for this request.", attempts=tried
                ).with_headers(extra)
            times.node = forwarded.node
            return await _relay(request, forwarded.response, call, times, extra)
        except (asyncio.CancelledError, ConnectionResetError):
            # The client went away (aiohttp cancels its handler): closing the node's answer
            # below cancels the node's request. A client that hangs up once it has the
            # stream's terminator (OpenAI's SDKs stop reading there) had its whole answer:
            # that call is recorded as served, not lost.
            recorded = times.complete
            if not recorded:
                ROUTER_DISCONNECTS.inc()
            raise
        finally:
            if forwarded is not None:
                forwarded.response.close()
            if recorded:
                record(times)

    def _decide(
        self, request: web.Request, raw: bytes, caller: str
    ) -> tuple[Call, Decision, list[tuple[str, str]]]:
        rt = runtime()
        snap = rt.engine.snapshot
        if snap is None:
            raise RouterError(503, "The router has no inventory snapshot yet; retry shortly.")
        _by_address, by_node, routable = endpoint_map(snap.topology)
        call = read_call(
            request.path,
            raw,
            headers=request.headers,
            default_source=self.default_source,
            caller=caller,
            among=routable,  # only nodes with an address can be forwarded to
        )
        try:
            shed_if_saturated(rt, call.decision)
            decision = rt.decide(call.decision)
        except UnknownName as exc:
            if exc.field == "model":
                raise RouterError(404, str(exc), param="model", code="model_not_found") from None
            raise RouterError(400, str(exc), param=exc.field) from None
        if decision.node is None:
            raise RouterError(
                503,
                NO_NODE_MESSAGE,
                code="no_eligible_node",
                reasons=dict(sorted(decision.rejected.items())),
            )
        names = [decision.node, *decision.fallbacks]
        return call, decision, [(n, by_node[n]) for n in names]


async def _relay(
    request: web.Request,
    upstream: aiohttp.ClientResponse,
    call: Call,
    times: CallTimes,
    extra: dict[str, str],
) -> web.StreamResponse:
    """The node's answer to the client: streamed events as they come, anything else whole."""
    times.status = upstream.status
    headers = response_headers(upstream.headers)
    headers.popall(PROBE_HEADER, None)  # only the router says whether a probe answered
    headers.update(extra)
    events = upstream.content_type == "text/event-stream"
    if not events:
        parts = []
        try:
            async for part in upstream.content.iter_any():
                if times.first_token is None:
                    times.first_token = time.monotonic()
                parts.append(part)
        except aiohttp.ClientError as exc:
            raise RouterError(502, f"Node {times.node} failed mid-answer: {exc}").with_headers(
                extra
            ) from None
        body = b"".join(parts)
        times.ended = time.monotonic()
        times.complete = True
        if 200 <= upstream.status < 300:
            times.usage = usage_of(body)
        return web.Response(status=upstream.status, body=body, headers=headers)
    response = web.StreamResponse(status=upstream.status, headers=headers)
    await response.prepare(request)
    request[STREAMING] = True
    relay = SseRelay(strip_usage=call.strip_usage)
    chunks = upstream.content.iter_any()
    while True:
        try:
            chunk = await chunks.__anext__()
        except StopAsyncIteration:
            break
        except aiohttp.ClientError:
            # The node failed mid-answer: the outcome is a failure, and the client's
            # connection is cut (past the first byte an error has no place in the answer).
            times.first_token, times.usage = relay.first_token, relay.usage
            raise
        out = relay.feed(chunk, time.monotonic())
        if out:
            await response.write(out)  # ConnectionResetError: the client went away
            if relay.done and not times.complete:
                # The client has the terminator: the answer is complete whatever follows.
                times.ended = time.monotonic()
                times.complete = True
                times.first_token, times.usage = relay.first_token, relay.usage
    tail = relay.close()
    if tail:
        await response.write(tail)
    if not times.complete:
        times.ended = time.monotonic()
        times.complete = True
        times.first_token, times.usage = relay.first_token, relay.usage
    await response.write_eof()
    return response
