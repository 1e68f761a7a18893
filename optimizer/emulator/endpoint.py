"""One emulated node's HTTP endpoint: vLLM's OpenAI server routes over the node model.

Routes: `POST /v1/completions`, `POST /v1/chat/completions`, `GET /v1/models`, `GET /health`,
`GET /metrics`. Every answer carries `x-locus-node` (the node's name). Errors are OpenAI's
shape (`optimizer.emulator.openai`): 400 for a bad body, an unknown `x-locus-source`, a source
with no link to the node, or a sequence beyond the node's KV room (vLLM's "maximum context
length" answer); 404 for a model the node does not serve or an unknown path; 413 for a body
over `MAX_BODY_BYTES`; 503 on a node whose state is `down`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web

from optimizer.emulator import phases
from optimizer.emulator.engine import EmulatedFleet
from optimizer.emulator.metrics import CONTENT_TYPE, render_vllm
from optimizer.emulator.openai import MAX_BODY_BYTES, Answer, ApiError, Ask, parse_request
from optimizer.emulator.sequence import Sequence
from optimizer.emulator.text import output_text

SOURCE_HEADER = "x-locus-source"
NODE_HEADER = "x-locus-node"
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(status: int, body: bytes) -> web.Response:
    return web.Response(status=status, body=body, content_type="application/json")


class NodeEndpoint:
    """The handlers of node `index` of `fleet`; requests without a source header come from
    `default`: (source name or None, site). `handoffs` is shared by every node of the fleet
    (a prefill handed off on one is continued on another)."""

    def __init__(
        self,
        fleet: EmulatedFleet,
        index: int,
        default: tuple[str | None, str],
        created: int,
        handoffs: phases.Handoffs | None = None,
    ) -> None:
        self.fleet = fleet
        self.handoffs = handoffs or phases.Handoffs()
        self.index = index
        self.node = fleet.topology.nodes[index]
        self.default = default
        self.created = created
        served = fleet.fleet.served
        model_index = fleet.fleet.model_index
        self.models = [m for m in self.node.models if served[model_index[m]][index]]

    def route(self, app: web.Application) -> None:
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/v1/models", self.list_models)
        app.router.add_get("/health", self.health)
        app.router.add_get("/metrics", self.metrics)
        app.on_response_prepare.append(self._name_node)

    async def _name_node(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers[NODE_HEADER] = self.node.name

    @web.middleware
    async def errors(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        """Every error as OpenAI's error body, aiohttp's own (404, 405, 413) included."""
        try:
            return await handler(request)
        except ApiError as exc:
            return _json(exc.status, exc.body())
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            message = exc.reason
            if exc.status == 413:
                message = f"The request body is larger than {MAX_BODY_BYTES} bytes."
            return _json(exc.status, ApiError(exc.status, message).body())

    # -- OpenAI -------------------------------------------------------------------------------
    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, chat=False)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, chat=True)

    async def _serve(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        received = self.fleet.now()
        if self.node.state == "down":
            raise ApiError(503, f"Node {self.node.name} is down.")
        ask = parse_request(await request.read(), chat=chat)
        if ask.model not in self.models:
            raise ApiError(
                404,
                f"The model `{ask.model[:200]}` does not exist on node {self.node.name} "
                f"(it serves: {', '.join(self.models)}).",
                "model",
            )
        source, site = self._source(request)
        room = self.fleet.kv_room(self.index, ask.model)
        asked = ask.prompt_tokens + ask.max_tokens
        if asked > room:
            raise ApiError(
                400,
                f"This model's maximum context length is {room} tokens on node "
                f"{self.node.name} (its KV room). However, you requested {asked} tokens "
                f"({ask.prompt_tokens} in the messages, {ask.max_tokens} in the completion).",
            )
        prefill, to_prefill = phases.prefill_node(
            self.fleet, ask, request.headers.get(phases.PREFILLER_HEADER)
        )
        phases.check_role(self.node.role, ask, prefill is not None)
        ready_after = 0.0
        origin: float | None = None
        if prefill is not None:
            if to_prefill:  # llm-d's sidecar: the prefill node's phase first
                first = self.fleet.submit(
                    prefill, ask.model, site, ask.prompt_tokens, ask.hashes, 1,
                    stream=False, source=source, received=received,
                )  # fmt: skip
                first.prefill_phase, first.decode_node = True, self.index
                try:
                    await self.fleet.finished(first)
                finally:
                    self.fleet.cancel(first)
                origin = first.arrival
            else:  # the router's second call: its first was a prefill handed off here
                origin = self.handoffs.take(ask, prefill)
            ready_after = self.fleet.kv_transfer_s(
                prefill, self.index, ask.model, ask.prompt_tokens
            )
        seq = self.fleet.submit(
            self.index,
            ask.model,
            site,
            ask.prompt_tokens,
            ask.hashes,
            ask.max_tokens,
            stream=ask.stream,
            source=source,
            received=None if prefill is not None else received,
            prefilled=prefill is not None,
            ready_after_s=ready_after,
        )
        if prefill is not None:
            seq.prefilled_on, seq.origin = prefill, origin
        handing_off = phases.remote_decode(ask) and not ask.stream
        seq.prefill_phase = handing_off  # its decode request writes the request's line
        try:
            if ask.stream:
                return await self._stream(request, seq, ask)
            await self.fleet.finished(seq)
            body = Answer(ask).whole(output_text(seq.output), seq.output)
            if handing_off:
                kv = phases.handed_off(self.node.name, self.handoffs.add(self.index, seq.arrival))
                body = orjson.dumps({**orjson.loads(body), "kv_transfer_params": kv})
            return _json(200, body)
        finally:
            # A client gone mid-answer cancels this handler (aiohttp's handler_cancellation):
            # its sequence is freed here, at once. After a full answer this does nothing.
            self.fleet.cancel(seq)

    async def _stream(self, request: web.Request, seq: Sequence, ask: Ask) -> web.StreamResponse:
        answer = Answer(ask)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        sent = 0
        async for produced in self.fleet.tokens(seq):
            text = output_text(produced - sent, sent)
            opening = answer.opening() if sent == 0 else b""
            await response.write(opening + answer.chunk(text, produced == seq.output))
            sent = produced
        await response.write(answer.closing(sent))
        await response.write_eof()
        return response

    def _source(self, request: web.Request) -> tuple[str | None, str]:
        """(source name, its site): the header's, else the default."""
        name = request.headers.get(SOURCE_HEADER)
        world = self.fleet.topology
        if name is None:
            name, site = self.default
        else:
            source = world.source_by_name.get(name)
            if source is None:
                known = ", ".join(s.name for s in world.sources) or "none"
                raise ApiError(
                    400, f"{SOURCE_HEADER}: unknown source {name[:100]!r} (sources: {known})"
                )
            site = source.site
        if (site, self.node.site) not in world.routes:
            raise ApiError(
                400, f"Site {site} has no link to node {self.node.name}'s site {self.node.site}."
            )
        return name, site

    # -- the rest of vLLM's server ------------------------------------------------------------
    async def list_models(self, request: web.Request) -> web.Response:
        data = [
            {
                "id": m,
                "object": "model",
                "created": self.created,
                "owned_by": "locus-emulator",
                "root": m,
                "parent": None,
                "max_model_len": self.fleet.kv_room(self.index, m),
            }
            for m in self.models
        ]
        return _json(200, orjson.dumps({"object": "list", "data": data}))

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=503 if self.node.state == "down" else 200)

    async def metrics(self, request: web.Request) -> web.Response:
        body = render_vllm(self.fleet.engines(self.index))
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})
