"""Reading and writing the Envoy ext_proc messages of the Endpoint Picker Protocol.

The protocol is the Gateway API Inference Extension's (kubernetes-sigs/
gateway-api-inference-extension, docs/proposals/004-endpoint-picker-protocol/README.md); the
message shapes follow its reference picker, `pkg/epp/handlers/server.go` and `request.go`
(`populateRequestHeaderResponse`, `BuildErrResponse`) and `pkg/common/envoy`
(`BuildChunkedBodyResponses`). The messages are the generated protos of `xds-protos`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from envoy.config.core.v3 import base_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as ep
from envoy.type.v3 import http_status_pb2
from google.protobuf import struct_pb2

DESTINATION_HEADER = "x-gateway-destination-endpoint"
SERVED_KEY = "x-gateway-destination-endpoint-served"
SUBSET_KEY = "x-gateway-destination-endpoint-subset"
# The metadata namespaces of proposal 004: the answer's and the served endpoint's, and the
# one the data plane passes a subset in.
LB_NAMESPACE = "envoy.lb"
SUBSET_NAMESPACE = "envoy.lb.subset_hint"
# Some Envoy deployments cap a streamed chunk at 64 KiB; the reference picker splits at 62,000
# bytes for a margin (`BodyByteLimit`), and so does this one when it has to re-chunk a body.
BODY_CHUNK_BYTES = 62_000
_OVERWRITE = base_pb2.HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD


def headers_of(http_headers: ep.HttpHeaders) -> dict[str, str]:
    """Lower-cased header names to values. Envoy sends `raw_value` (bytes) unless told
    otherwise; `value` is read when it is the one set. A repeated name keeps its last value."""
    found: dict[str, str] = {}
    for header in http_headers.headers.headers:
        value = header.raw_value.decode("utf-8", "replace") if header.raw_value else header.value
        found[header.key.lower()] = value
    return found


def metadata_value(message: ep.ProcessingRequest, namespace: str, key: str) -> Any:
    """A value from the request's `metadata_context.filter_metadata[namespace][key]`, as
    plain Python (a list of strings for the subset hint), or None."""
    namespaces = message.metadata_context.filter_metadata
    if namespace not in namespaces:
        return None
    fields = namespaces[namespace].fields
    if key not in fields:
        return None
    return _plain(fields[key])


def _plain(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "list_value":
        return [_plain(v) for v in value.list_value.values]
    if kind == "struct_value":
        return {k: _plain(v) for k, v in value.struct_value.fields.items()}
    return getattr(value, kind) if kind and kind != "null_value" else None


def _header(key: str, value: str) -> base_pb2.HeaderValueOption:
    # Overwrite, never append: a client's own x-gateway-destination-endpoint must not survive
    # next to the picker's (it would pick the node itself).
    return base_pb2.HeaderValueOption(
        header=base_pb2.HeaderValue(key=key, raw_value=value.encode()), append_action=_OVERWRITE
    )


def routing_headers_response(
    endpoints: str, extra_headers: dict[str, str], remove: tuple[str, ...] = ()
) -> ep.ProcessingResponse:
    """The request-headers answer: the endpoints in the header and in `envoy.lb` dynamic
    metadata (the same value, as proposal 004 requires), and the route cache cleared so
    Envoy routes on the new header; the `remove` headers taken off the request."""
    metadata = struct_pb2.Struct()
    metadata.fields[LB_NAMESPACE].struct_value.fields[DESTINATION_HEADER].string_value = endpoints
    headers = [_header(DESTINATION_HEADER, endpoints)]
    headers += [_header(key, value) for key, value in extra_headers.items()]
    return ep.ProcessingResponse(
        request_headers=ep.HeadersResponse(
            response=ep.CommonResponse(
                clear_route_cache=True,
                header_mutation=ep.HeaderMutation(set_headers=headers, remove_headers=remove),
            )
        ),
        dynamic_metadata=metadata,
    )


def body_responses(
    chunks: Iterable[bytes], *, request: bool, end_of_stream: bool
) -> list[ep.ProcessingResponse]:
    """Streamed body answers (FULL_DUPLEX_STREAMED) carrying `chunks` in order; the last one
    ends the stream when `end_of_stream` (not when trailers follow)."""
    pieces = list(chunks) or [b""]
    answers = []
    for index, chunk in enumerate(pieces):
        body = ep.BodyResponse(
            response=ep.CommonResponse(
                body_mutation=ep.BodyMutation(
                    streamed_response=ep.StreamedBodyResponse(
                        body=chunk, end_of_stream=end_of_stream and index == len(pieces) - 1
                    )
                )
            )
        )
        answers.append(
            ep.ProcessingResponse(request_body=body)
            if request
            else ep.ProcessingResponse(response_body=body)
        )
    return answers


def rechunk(body: bytes) -> list[bytes]:
    return [body[i : i + BODY_CHUNK_BYTES] for i in range(0, len(body), BODY_CHUNK_BYTES)]


def bounded(chunks: list[bytes]) -> list[bytes]:
    """`chunks` as they came, except that one over BODY_CHUNK_BYTES (a body that arrived in one
    large message, from an Envoy that buffered it) is cut into the reference picker's pieces,
    so no answer message nears the gRPC message limits on Envoy's side."""
    return [
        piece
        for chunk in chunks
        for piece in (rechunk(chunk) if len(chunk) > BODY_CHUNK_BYTES else [chunk])
    ]


def response_headers_response(
    extra_headers: dict[str, str], remove: tuple[str, ...] = ()
) -> ep.ProcessingResponse:
    """The response-headers answer: `extra_headers` set, the `remove` headers taken off the
    node's answer."""
    return ep.ProcessingResponse(
        response_headers=ep.HeadersResponse(
            response=ep.CommonResponse(
                header_mutation=ep.HeaderMutation(
                    set_headers=[_header(k, v) for k, v in extra_headers.items()],
                    remove_headers=remove,
                )
            )
        )
    )


def trailers_response(*, request: bool) -> ep.ProcessingResponse:
    if request:
        return ep.ProcessingResponse(request_trailers=ep.TrailersResponse())
    return ep.ProcessingResponse(response_trailers=ep.TrailersResponse())


def immediate_response(status: int, payload: dict[str, Any]) -> ep.ProcessingResponse:
    """Answer the client at once (Envoy sends it instead of proxying): the API's one error
    shape as JSON, `details` naming the picker in Envoy's access log."""
    return ep.ProcessingResponse(
        immediate_response=ep.ImmediateResponse(
            status=http_status_pb2.HttpStatus(code=status),  # type: ignore[arg-type]
            headers=ep.HeaderMutation(set_headers=[_header("content-type", "application/json")]),
            body=json.dumps(payload, separators=(",", ":")).encode(),
            details=f"locus_picker_{status}",
        )
    )
