"""One ext_proc stream (one HTTP request through the gateway): pick on the request path,
record the outcome on the response path.

Message order, as Envoy sends it with request and response header and trailer modes SEND and
body modes FULL_DUPLEX_STREAMED, and as the reference picker answers it
(gateway-api-inference-extension `pkg/epp/handlers/server.go`): request headers (held: the
pick needs the body), body chunks (buffered, unanswered) until one has `end_of_stream` or
trailers arrive, then the headers answer with the endpoints followed by the body echoed back
in streamed chunks (and the trailers answer); then response headers, response body chunks
(each echoed at once) and trailers. Any failure ends the stream with an ImmediateResponse,
never silence (docs/gateway.md, "Errors").

The decision is the REST API's (`runtime().decide`: same engine, policy, rollout arms,
breakers, records, metrics and live stream) and the outcome goes through
`runtime().record_outcome`, as `POST /api/v1/placements/{id}/outcome` does. Nothing here
touches the database or the network.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from envoy.service.ext_proc.v3 import external_processor_pb2 as ep

from console.placement.doors.endpoints import endpoint_map, within_subset
from console.placement.doors.extproc import envoy, headers
from console.placement.doors.extproc.metrics import PICKER_SECONDS
from console.placement.doors.extproc.refusals import (
    Refused,
    check_request_headers,
    shed_if_saturated,
)
from console.placement.doors.openai import PATHS, BadBody, parse_openai
from console.placement.doors.probe_header import PROBE_HEADER, probe_header
from console.placement.engine.inputs import DecisionInput, UnknownName
from console.placement.engine.runtime import runtime

logger = logging.getLogger(__name__)

# Request headers the picker reads (docs/gateway.md, "Headers"; headers.py).
SOURCE_HEADER = headers.SOURCE
SESSION_HEADER = headers.SESSION
DECISION_HEADER = headers.DECISION


class PickerStream:
    """The state of one stream; `handle` answers each message in order."""

    def __init__(self, default_source: str | None) -> None:
        self.default_source = default_source
        self.finished = False
        self.received_at = time.monotonic()
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.size = 0
        self.decision_id: str | None = None
        self.probe: dict[str, Any] | None = None
        self.endpoints: list[str] = []
        self.nodes: list[str] = []
        self.ttft_target_ms: float | None = None
        self.status: int | None = None
        self.served: str | None = None
        self.first_byte_at: float | None = None
        self.recorded = False
        self.subset: Any = None

    # -- dispatch --------------------------------------------------------------------------
    def handle(self, message: ep.ProcessingRequest) -> list[ep.ProcessingResponse]:
        try:
            return self._handle(message)
        except Refused as exc:
            self.finished = True
            return [envoy.immediate_response(exc.status, exc.payload)]
        except Exception:
            logger.exception("picker failed on a %s message", message.WhichOneof("request"))
            self.finished = True
            return [envoy.immediate_response(500, {"message": "The endpoint picker failed."})]

    def _handle(self, message: ep.ProcessingRequest) -> list[ep.ProcessingResponse]:
        kind = message.WhichOneof("request")
        if message.HasField("metadata_context"):
            # The subset hint comes with the request headers (the reference picker reads it
            # there); a later message that carries one too is as good.
            hint = envoy.metadata_value(message, envoy.SUBSET_NAMESPACE, envoy.SUBSET_KEY)
            self.subset = hint if hint is not None else self.subset
        if kind == "request_headers":
            self.received_at = time.monotonic()
            self.headers = envoy.headers_of(message.request_headers)
            if message.request_headers.end_of_stream:
                raise Refused(400, "Locus places OpenAI requests with a body; this one has none.")
            ttft_target_ms = check_request_headers(self.headers)
            if ttft_target_ms is not None:
                self.ttft_target_ms = ttft_target_ms
            return []
        if kind == "request_body":
            if self.decision_id is not None:  # past the pick: pass through
                return envoy.body_responses(
                    [message.request_body.body],
                    request=True,
                    end_of_stream=message.request_body.end_of_stream,
                )
            self._buffer(message.request_body.body)
            if not message.request_body.end_of_stream:
                return []
            return self._pick(end_of_stream=True)
        if kind == "request_trailers":
            answers = [] if self.decision_id is not None else self._pick(end_of_stream=False)
            return [*answers, envoy.trailers_response(request=True)]
        self._note_served(message)
        if kind == "response_headers":
            self.status = _status(envoy.headers_of(message.response_headers))
            if message.response_headers.end_of_stream:
                self._record(time.monotonic())
            return [self._response_headers()]
        if kind == "response_body":
            now = time.monotonic()
            if self.first_byte_at is None:
                self.first_byte_at = now
            if message.response_body.end_of_stream:
                self._record(now)
            return envoy.body_responses(
                [message.response_body.body],
                request=False,
                end_of_stream=message.response_body.end_of_stream,
            )
        if kind == "response_trailers":
            self._record(time.monotonic())
            return [envoy.trailers_response(request=False)]
        raise Refused(400, f"Unexpected ext_proc message {kind!r}.")

    # -- request path ----------------------------------------------------------------------
    def _buffer(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > settings.LOCUS_PICKER_MAX_BODY_BYTES:
            raise Refused(413, "The request body is too large.")
        self.chunks.append(chunk)

    def _pick(self, *, end_of_stream: bool) -> list[Any]:
        with PICKER_SECONDS.time():
            return self._decide(end_of_stream=end_of_stream)

    def _decide(self, *, end_of_stream: bool) -> list[Any]:
        rt = runtime()
        snap = rt.engine.snapshot
        if snap is None:
            raise Refused(503, "The endpoint picker has no inventory snapshot yet.")
        path = self.headers.get(":path", "").partition("?")[0]
        if path not in PATHS:  # a body before any request headers
            raise Refused(400, "The request headers must come before the body.")
        _, rewrite = headers.read(self.headers, headers.REWRITE)
        try:
            call = parse_openai(path, b"".join(self.chunks), model_rewrite=rewrite)
        except BadBody as exc:
            raise Refused(400, "The request body cannot be placed.", errors=exc.errors) from None
        by_address, by_node, routable = endpoint_map(snap.topology)
        among, unknown = (
            (routable, {}) if self.subset is None else within_subset(self.subset, by_address)
        )
        source = self.headers.get(SOURCE_HEADER) or self.default_source
        if source is None:
            raise Refused(
                400, "No request source.", errors={SOURCE_HEADER: ["Name a request source."]}
            )
        objective_header, objective = headers.read(self.headers, headers.OBJECTIVE)
        _, fairness = headers.read(self.headers, headers.FAIRNESS)
        body = DecisionInput(
            model=call.model,
            prompt_tokens=call.prompt_tokens,
            max_output_tokens=call.max_output_tokens,
            source=source,
            slo=objective or None,
            prefix_hashes=call.prefix_hashes,
            # A tenant without a session stays on one canary arm too (docs/gateway.md).
            session_id=self.headers.get(SESSION_HEADER) or fairness,
            among=among,
        )
        try:
            shed_if_saturated(rt, body)
            decision = rt.decide(body)
        except UnknownName as exc:
            fields = {"source": SOURCE_HEADER, "slo": objective_header, "model": "body.model"}
            field = fields.get(exc.field, exc.field)
            errors = {field: [str(exc)]}
            raise Refused(400, "The request cannot be placed.", errors=errors) from None
        if decision.node is None:
            reasons = {**dict(sorted(decision.rejected.items())), **unknown}
            raise Refused(503, "No endpoint may serve this request.", reasons=reasons)
        self.decision_id = decision.decision_id
        self.probe = decision.probe
        # LOCUS_PICKER_ENDPOINTS caps the answer (1 for a plain ORIGINAL_DST cluster, which
        # reads a single ip:port; docs/gateway.md, "Envoy"); header and metadata stay equal.
        limit = settings.LOCUS_PICKER_ENDPOINTS or None
        self.nodes = [decision.node, *decision.fallbacks][:limit]
        self.endpoints = [by_node[n] for n in self.nodes]
        extra = {DECISION_HEADER: decision.decision_id}
        # A split decision names its prefill node to llm-d's routing sidecar on the decode
        # node, which prefills there and then decodes (headers.PREFILLER); an unsplit one
        # drops a client's own, so the sidecar runs both phases where Envoy sends it.
        remove: tuple[str, ...] = (headers.PREFILLER,)
        if decision.prefill_node is not None:
            address = by_node.get(decision.prefill_node)
            if address is None:  # the engine only splits onto routable nodes (among)
                raise Refused(503, "The prefill node has no address.")
            extra[headers.PREFILLER] = address
            remove = ()
        if call.rewritten:
            # Envoy's ext_proc docs: a body mutated in streamed mode needs its length fixed.
            extra["content-length"] = str(len(call.body))
        chunks = envoy.bounded([call.body] if call.rewritten else self.chunks)
        self.chunks = []
        return [
            envoy.routing_headers_response(",".join(self.endpoints), extra, remove),
            *envoy.body_responses(chunks, request=True, end_of_stream=end_of_stream),
        ]

    # -- response path ---------------------------------------------------------------------
    def _response_headers(self) -> ep.ProcessingResponse:
        """The decision id, and a probe's note on its answers only (docs/gateway.md)."""
        if self.decision_id is None:
            return envoy.response_headers_response({})
        extra = {DECISION_HEADER: self.decision_id}
        if self.probe is None:
            return envoy.response_headers_response(extra, remove=(PROBE_HEADER,))
        extra[PROBE_HEADER] = probe_header(self.probe)
        return envoy.response_headers_response(extra)

    def _note_served(self, message: ep.ProcessingRequest) -> None:
        served = envoy.metadata_value(message, envoy.LB_NAMESPACE, envoy.SERVED_KEY)
        if isinstance(served, str) and served:
            self.served = served.split(",")[0].strip()

    def _record(self, now: float) -> None:
        """The outcome, once, with no client help: `ok` from `:status`, TTFT at the first
        response body byte, end-to-end now, the node that served from Envoy's metadata."""
        if self.recorded or self.decision_id is None or self.status is None:
            return
        self.recorded = True
        rt = runtime()
        served_node = self.nodes[0]
        if self.served in self.endpoints:
            position = self.endpoints.index(self.served)
            served_node = self.nodes[position]
            for failed in self.nodes[:position]:
                # Envoy went down the list only because these endpoints failed.
                rt.breakers.record(failed, False)
        e2e_ms = (now - self.received_at) * 1000
        first = self.first_byte_at
        ttft_ms = None if first is None else (first - self.received_at) * 1000
        try:
            rt.record_outcome(
                self.decision_id,
                ok=200 <= self.status < 300,
                ttft_ms=ttft_ms,
                e2e_ms=e2e_ms,
                served_node=served_node,
                ttft_target_ms=self.ttft_target_ms,
            )
        except Exception:
            logger.warning("outcome of %s not recorded", self.decision_id, exc_info=True)

    def close(self) -> None:
        """The stream ended: a failed response still counts against its node."""
        if self.status is not None and not 200 <= self.status < 300:
            self._record(time.monotonic())


def _status(headers: dict[str, str]) -> int:
    try:
        return int(headers.get(":status", "0"))
    except ValueError:
        return 0
