"""The request path of the endpoint picker, driven over grpcio with real Envoy messages in
Envoy's order: headers, body in chunks (then trailers), answered with the endpoints."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from console.placement.engine.runtime import runtime
from console.placement.models import DecisionRecord
from tests.console.placement.doors.extproc.envoy_client import (
    EnvoyStream,
    chunks,
    echoed,
    endpoints_of,
    immediate,
    request_body,
    request_headers,
    request_trailers,
    set_header,
)

pytestmark = pytest.mark.django_db
Envoy = Callable[[], EnvoyStream]
EU_LLAMA = {"muc-l4-1", "fra-h100-1", "fra-h100-2", "fra-h100-3", "fra-h100-4", "fra-h100-5"}
CHAT = {
    "model": "llama-3.1-8b",
    "messages": [
        {"role": "system", "content": "Answer in one line. " * 200},
        {"role": "user", "content": "Zürich\u0000 or Genève? 🚆"},
    ],
    "max_completion_tokens": 64,
    "stream": True,
}


def _body(data: dict[str, Any] = CHAT) -> bytes:
    return json.dumps(data, ensure_ascii=False, indent=1).encode()


def _nodes(endpoints: list[str], addresses: dict[str, str]) -> list[str]:
    by_address = {a: n for n, a in addresses.items()}
    return [by_address[e] for e in endpoints]


def test_it_answers_pick_and_fallbacks_alike_in_header_and_metadata(
    envoy: Envoy, addresses: dict[str, str]
) -> None:
    body = _body()
    stream = envoy()
    stream.send(request_headers(), *[request_body(c, end_of_stream=False) for c in chunks(body, 3)])
    stream.send(request_body(b"", end_of_stream=True))
    headers, *bodies = stream.recv(5)
    header, metadata = endpoints_of(headers)
    assert header == metadata and len(header) == 4  # the pick and LOCUS_MAX_FALLBACKS
    assert headers.request_headers.response.clear_route_cache
    nodes = _nodes(header, addresses)
    assert set(nodes) <= EU_LLAMA  # residency, model served, reachable
    assert echoed(bodies) == body  # byte for byte, in the chunks it came in
    assert [
        b.request_body.response.body_mutation.streamed_response.end_of_stream for b in bodies
    ] == [False, False, False, True]
    assert set_header(headers, "content-length") is None  # the body did not change
    decision_id = set_header(headers, "x-locus-decision-id")
    stream.close()
    runtime().recorder.flush()
    record = DecisionRecord.objects.get(pk=decision_id)
    assert record.node == nodes[0] and record.fallbacks == nodes[1:]
    assert record.source == "munich-app" and record.slo == "interactive"
    assert record.max_output_tokens == 64 and record.prompt_tokens > 1000


def test_trailers_end_the_body_and_are_answered_after_it(envoy: Envoy) -> None:
    body = _body()
    stream = envoy()
    stream.send(request_headers(), *[request_body(c, end_of_stream=False) for c in chunks(body, 2)])
    stream.send(request_trailers())
    answers = stream.recv(4)
    assert [a.WhichOneof("response") for a in answers] == [
        "request_headers",
        "request_body",
        "request_body",
        "request_trailers",
    ]
    assert echoed(answers) == body
    assert not any(
        a.request_body.response.body_mutation.streamed_response.end_of_stream for a in answers
    )


def test_a_source_header_moves_the_request_and_its_hard_constraints(
    envoy: Envoy, addresses: dict[str, str]
) -> None:
    stream = envoy()
    stream.send(
        request_headers("/v1/completions", {"x-locus-source": "us-batch"}),
        request_body(
            json.dumps({"model": "llama-3.1-8b", "prompt": "hi"}).encode(), end_of_stream=True
        ),
    )
    nodes = _nodes(endpoints_of(stream.recv(2)[0])[0], addresses)
    # us-batch (no residency) reaches the US node; the island and the qwen node never.
    assert "island-h100-1" not in nodes and "muc-qwen-1" not in nodes
    assert "use-h100-1" in nodes


def test_the_subset_hint_limits_the_candidates(envoy: Envoy, addresses: dict[str, str]) -> None:
    subset = [addresses["fra-h100-3"], addresses["use-h100-1"], addresses["fra-h100-5"]]
    stream = envoy()
    stream.send(request_headers(subset=subset), request_body(_body(), end_of_stream=True))
    header, _ = endpoints_of(stream.recv(2)[0])
    assert sorted(_nodes(header, addresses)) == ["fra-h100-3", "fra-h100-5"]  # not the US one


def test_no_eligible_endpoint_in_the_subset_is_a_503_with_reasons(
    envoy: Envoy, addresses: dict[str, str]
) -> None:
    subset = [addresses["use-h100-1"], addresses["muc-qwen-1"], "192.0.2.1:8000"]
    stream = envoy()
    stream.send(request_headers(subset=subset), request_body(_body(), end_of_stream=True))
    status, payload = immediate(stream.recv()[0])
    assert status == 503
    assert payload["reasons"] == {
        "use-h100-1": "residency",
        "muc-qwen-1": "model_not_served",
        "192.0.2.1:8000": "unknown_endpoint",
    }
    assert stream.close() == []  # the picker ended the stream


def test_an_empty_subset_is_a_503(envoy: Envoy) -> None:
    stream = envoy()
    stream.send(request_headers(subset=[]), request_body(_body(), end_of_stream=True))
    assert immediate(stream.recv()[0])[0] == 503


def test_a_saturated_pool_sheds_with_429(
    envoy: Envoy, settings: Any, set_loads: Callable[..., None]
) -> None:
    settings.LOCUS_PICKER_SHED_QUEUE_DEPTH = 8
    set_loads(**{name.replace("-", "_"): (9, 4, 0.5, 0.0) for name in EU_LLAMA})
    stream = envoy()
    stream.send(request_headers(), request_body(_body(), end_of_stream=True))
    status, payload = immediate(stream.recv()[0])
    assert status == 429 and payload["queue_depth"]["fra-h100-1"] == 9
    set_loads(fra_h100_2=(2, 4, 0.5, 0.0))  # one endpoint with room: placed again
    stream = envoy()
    stream.send(request_headers(), request_body(_body(), end_of_stream=True))
    assert stream.recv()[0].WhichOneof("response") == "request_headers"


@pytest.mark.parametrize(
    ("path", "headers", "body", "status", "field"),
    [
        ("/v1/chat/completions", {}, b'{"model": "llama-3.1-8b", "messages": [', 400, "body"),
        ("/v1/chat/completions", {}, b"[" * 100_000 + b"]" * 100_000, 400, "body"),
        ("/v1/chat/completions", {}, b'{"messages": [{"role": "user"}]}', 400, "body.model"),
        (
            "/v1/completions",
            {},
            b'{"model": "llama-3.1-8b", "prompt": "x", "max_tokens": ' + b"9" * 400 + b"}",
            400,
            "body.max_tokens",
        ),
        (
            "/v1/completions",
            {},
            b'{"model": "llama-3.1-8b", "prompt": "x", "max_tokens": true}',
            400,
            "body.max_tokens",
        ),
        ("/v1/completions", {}, b'{"model": "gpt-x", "prompt": "x"}', 400, "body.model"),
        (
            "/v1/completions",
            {"x-gateway-inference-objective": "gold"},
            b'{"model": "llama-3.1-8b", "prompt": "x"}',
            400,
            "x-gateway-inference-objective",
        ),
        (
            "/v1/completions",
            {"x-locus-source": "mars"},
            b'{"model": "llama-3.1-8b", "prompt": "x"}',
            400,
            "x-locus-source",
        ),
        ("/v1/completions", {"x-slo-ttft-ms": "nan"}, b"{}", 400, "x-slo-ttft-ms"),
        ("/v1/embeddings", {}, b"{}", 404, None),
        ("/v1/completions", {"content-encoding": "gzip"}, b"\x1f\x8b", 415, None),
    ],
)
def test_bad_requests_get_an_immediate_response_naming_the_problem(
    envoy: Envoy, path: str, headers: dict[str, str], body: bytes, status: int, field: str | None
) -> None:
    stream = envoy()
    stream.send(request_headers(path, headers), request_body(body, end_of_stream=True))
    got, payload = immediate(stream.recv()[0])
    assert got == status and payload["message"]
    if field is not None:
        assert field in payload["errors"], payload
    assert stream.close() == []


def test_a_body_over_the_limit_is_a_413_before_it_is_all_read(envoy: Envoy, settings: Any) -> None:
    settings.LOCUS_PICKER_MAX_BODY_BYTES = 1000
    stream = envoy()
    stream.send(request_headers(), request_body(b" " * 600, end_of_stream=False))
    stream.send(request_body(b" " * 600, end_of_stream=False))
    assert immediate(stream.recv()[0])[0] == 413


def test_a_request_without_a_body_is_a_400(envoy: Envoy) -> None:
    stream = envoy()
    stream.send(request_headers(end_of_stream=True))
    assert immediate(stream.recv()[0])[0] == 400


def test_a_model_rewrite_places_and_forwards_the_new_model(
    gateway_fleet: Any, envoy: Envoy, addresses: dict[str, str]
) -> None:
    body = json.dumps({"model": "llama", "prompt": "x" * 5000}).encode()
    stream = envoy()
    stream.send(
        request_headers("/v1/completions", {"x-gateway-model-name-rewrite": "qwen2.5-7b"}),
        request_body(body, end_of_stream=True),
    )
    headers, forwarded = stream.recv(2)
    assert _nodes(endpoints_of(headers)[0], addresses) == ["muc-qwen-1"]
    sent = echoed([forwarded])
    assert json.loads(sent) == {"model": "qwen2.5-7b", "prompt": "x" * 5000}
    assert set_header(headers, "content-length") == str(len(sent))


def test_a_client_cannot_choose_its_own_endpoint(envoy: Envoy, addresses: dict[str, str]) -> None:
    stream = envoy()
    stream.send(
        request_headers(headers={"x-gateway-destination-endpoint": addresses["use-h100-1"]}),
        request_body(_body(), end_of_stream=True),
    )
    headers = stream.recv()[0]
    option = next(
        o
        for o in headers.request_headers.response.header_mutation.set_headers
        if o.header.key == "x-gateway-destination-endpoint"
    )
    assert option.append_action == option.OVERWRITE_IF_EXISTS_OR_ADD
    assert addresses["use-h100-1"] not in endpoints_of(headers)[0]


def test_a_subset_may_be_one_comma_separated_string_or_bare_ips(
    envoy: Envoy, addresses: dict[str, str]
) -> None:
    bare_ip = addresses["fra-h100-4"].rpartition(":")[0]
    stream = envoy()
    stream.send(
        request_headers(subset=f"{addresses['fra-h100-1']}, {bare_ip}"),  # type: ignore[arg-type]
        request_body(_body(), end_of_stream=True),
    )
    header, _ = endpoints_of(stream.recv(2)[0])
    assert sorted(_nodes(header, addresses)) == ["fra-h100-1", "fra-h100-4"]


def test_the_answer_can_be_capped_to_the_pick_alone(
    envoy: Envoy, settings: Any, addresses: dict[str, str]
) -> None:
    settings.LOCUS_PICKER_ENDPOINTS = 1  # for Envoy's ORIGINAL_DST, which reads one ip:port
    stream = envoy()
    stream.send(request_headers(), request_body(_body(), end_of_stream=True))
    header, metadata = endpoints_of(stream.recv(2)[0])
    assert header == metadata and len(header) == 1


def test_a_body_before_any_headers_is_a_400(envoy: Envoy) -> None:
    stream = envoy()
    stream.send(request_body(_body(), end_of_stream=True))
    assert immediate(stream.recv()[0])[0] == 400
