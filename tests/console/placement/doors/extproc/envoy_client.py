"""A stand-in for Envoy's side of the ext_proc stream: real `xds-protos` messages, sent over
grpcio in the order Envoy sends them, answers read as they come."""

from __future__ import annotations

import json
import queue
from collections.abc import Iterator, Sequence
from typing import Any

import grpc
from envoy.config.core.v3 import base_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as ep
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ep_grpc
from google.protobuf import json_format, struct_pb2

_END = object()


def _headers(pairs: dict[str, str]) -> base_pb2.HeaderMap:
    # Envoy sends raw_value (bytes), not value, by default.
    return base_pb2.HeaderMap(
        headers=[base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in pairs.items()]
    )


def _metadata(namespaces: dict[str, dict[str, Any]]) -> base_pb2.Metadata:
    metadata = base_pb2.Metadata()
    for name, fields in namespaces.items():
        struct = struct_pb2.Struct()
        struct.update(fields)
        metadata.filter_metadata[name].CopyFrom(struct)
    return metadata


def request_headers(
    path: str = "/v1/chat/completions",
    headers: dict[str, str] | None = None,
    *,
    end_of_stream: bool = False,
    subset: Sequence[str] | None = None,
) -> ep.ProcessingRequest:
    pairs = {":method": "POST", ":path": path, ":authority": "gw", **(headers or {})}
    message = ep.ProcessingRequest(
        request_headers=ep.HttpHeaders(headers=_headers(pairs), end_of_stream=end_of_stream)
    )
    if subset is not None:
        message.metadata_context.CopyFrom(
            _metadata({"envoy.lb.subset_hint": {"x-gateway-destination-endpoint-subset": subset}})
        )
    return message


def request_body(chunk: bytes, *, end_of_stream: bool) -> ep.ProcessingRequest:
    return ep.ProcessingRequest(request_body=ep.HttpBody(body=chunk, end_of_stream=end_of_stream))


def request_trailers() -> ep.ProcessingRequest:
    return ep.ProcessingRequest(
        request_trailers=ep.HttpTrailers(trailers=_headers({"x-trailer": "1"}))
    )


def response_headers(status: int, *, served: str | None = None) -> ep.ProcessingRequest:
    message = ep.ProcessingRequest(
        response_headers=ep.HttpHeaders(
            headers=_headers({":status": str(status), "content-type": "text/event-stream"})
        )
    )
    if served is not None:
        message.metadata_context.CopyFrom(
            _metadata({"envoy.lb": {"x-gateway-destination-endpoint-served": served}})
        )
    return message


def response_body(chunk: bytes, *, end_of_stream: bool) -> ep.ProcessingRequest:
    return ep.ProcessingRequest(response_body=ep.HttpBody(body=chunk, end_of_stream=end_of_stream))


def chunks(data: bytes, parts: int) -> list[bytes]:
    step = max(1, -(-len(data) // parts))
    return [data[i : i + step] for i in range(0, len(data), step)]


class EnvoyStream:
    """One ext_proc stream, driven step by step as Envoy drives it."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._out: queue.Queue[Any] = queue.Queue()
        self._answers: Iterator[ep.ProcessingResponse] = ep_grpc.ExternalProcessorStub(
            channel
        ).Process(iter(self._out.get, _END), timeout=10)

    def send(self, *messages: ep.ProcessingRequest) -> None:
        for message in messages:
            self._out.put(message)

    def recv(self, count: int = 1) -> list[ep.ProcessingResponse]:
        return [next(self._answers) for _ in range(count)]

    def close(self) -> list[ep.ProcessingResponse]:
        """End Envoy's side; the answers still due, until the picker ends its side."""
        self._out.put(_END)
        return list(self._answers)


def endpoints_of(answer: ep.ProcessingResponse) -> tuple[list[str], list[str]]:
    """(header value, envoy.lb metadata value), each split into endpoints."""
    mutation = answer.request_headers.response.header_mutation
    header = next(
        h.header.raw_value.decode()
        for h in mutation.set_headers
        if h.header.key == "x-gateway-destination-endpoint"
    )
    metadata = json_format.MessageToDict(answer.dynamic_metadata)
    return header.split(","), metadata["envoy.lb"]["x-gateway-destination-endpoint"].split(",")


def set_header(answer: ep.ProcessingResponse, key: str) -> str | None:
    for option in answer.request_headers.response.header_mutation.set_headers:
        if option.header.key == key:
            return str(option.header.raw_value.decode())
    return None


def immediate(answer: ep.ProcessingResponse) -> tuple[int, dict[str, Any]]:
    assert answer.WhichOneof("response") == "immediate_response", answer
    return answer.immediate_response.status.code, json.loads(answer.immediate_response.body)


def echoed(answers: Sequence[ep.ProcessingResponse], *, request: bool = True) -> bytes:
    field = "request_body" if request else "response_body"
    return b"".join(
        getattr(a, field).response.body_mutation.streamed_response.body
        for a in answers
        if a.WhichOneof("response") == field
    )
