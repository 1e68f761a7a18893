"""llm-d's current header names beside the `x-gateway-*` ones, through the real ext_proc
server: the current name wins when both are sent, as llm-d's router reads them
(`GetLowerCaseHeaderValue`, llm-d/llm-d-router `pkg/epp/metadata/consts.go`)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from console.placement.engine.runtime import runtime
from console.placement.models import DecisionRecord
from tests.console.placement.doors.extproc.envoy_client import (
    EnvoyStream,
    echoed,
    endpoints_of,
    immediate,
    request_body,
    request_headers,
    response_body,
    response_headers,
    set_header,
)

pytestmark = pytest.mark.django_db
Envoy = Callable[[], EnvoyStream]
BODY = json.dumps({"model": "llama-3.1-8b", "prompt": "x" * 3000, "max_tokens": 8}).encode()


def _place(envoy: Envoy, headers: dict[str, str], body: bytes = BODY) -> DecisionRecord:
    stream = envoy()
    stream.send(request_headers("/v1/completions", headers), request_body(body, end_of_stream=True))
    answer, _ = stream.recv(2)
    decision_id = set_header(answer, "x-locus-decision-id")
    assert decision_id, answer
    stream.close()
    runtime().recorder.flush()
    return DecisionRecord.objects.get(pk=decision_id)


@pytest.mark.parametrize(
    ("headers", "slo"),
    [
        ({"x-llm-d-inference-objective": "batch"}, "batch"),
        ({"x-gateway-inference-objective": "batch"}, "batch"),
        # Both sent: the current name's value, the alias's (unknown, a 400 alone) unread.
        (
            {"x-llm-d-inference-objective": "batch", "x-gateway-inference-objective": "gold"},
            "batch",
        ),
        ({}, "interactive"),  # the source's SLO
    ],
)
def test_the_objective_is_read_under_either_name(
    envoy: Envoy, headers: dict[str, str], slo: str
) -> None:
    assert _place(envoy, headers).slo == slo


def test_an_unknown_objective_names_the_header_that_carried_it(envoy: Envoy) -> None:
    stream = envoy()
    sent = {"x-llm-d-inference-objective": "gold", "x-gateway-inference-objective": "batch"}
    stream.send(request_headers("/v1/completions", sent), request_body(BODY, end_of_stream=True))
    status, payload = immediate(stream.recv()[0])
    assert status == 400 and list(payload["errors"]) == ["x-llm-d-inference-objective"]


def test_the_fairness_id_keys_the_session_under_either_name(envoy: Envoy) -> None:
    both = {"x-llm-d-inference-fairness-id": "tenant-a", "x-gateway-inference-fairness-id": "b"}
    assert _place(envoy, both).session_id == "tenant-a"
    assert _place(envoy, {"x-gateway-inference-fairness-id": "b"}).session_id == "b"
    token = {"x-session-token": "s1", "x-llm-d-inference-fairness-id": "tenant-a"}
    assert _place(envoy, token).session_id == "s1"


def test_the_model_rewrite_is_read_under_the_current_name_first(
    envoy: Envoy, addresses: dict[str, str]
) -> None:
    body = json.dumps({"model": "llama", "prompt": "x" * 5000}).encode()
    stream = envoy()
    sent = {"x-llm-d-model-name-rewrite": "qwen2.5-7b", "x-gateway-model-name-rewrite": "nope"}
    stream.send(request_headers("/v1/completions", sent), request_body(body, end_of_stream=True))
    answer, forwarded = stream.recv(2)
    assert endpoints_of(answer)[0] == [addresses["muc-qwen-1"]]
    assert json.loads(echoed([forwarded]))["model"] == "qwen2.5-7b"


@pytest.mark.parametrize("header", ["x-llm-d-slo-ttft-ms", "x-slo-ttft-ms"])
def test_a_bad_ttft_target_is_a_400_naming_the_header_sent(envoy: Envoy, header: str) -> None:
    stream = envoy()
    stream.send(
        request_headers("/v1/completions", {header: "soon"}), request_body(BODY, end_of_stream=True)
    )
    status, payload = immediate(stream.recv()[0])
    assert status == 400 and list(payload["errors"]) == [header]


def test_the_current_ttft_target_judges_the_outcome_over_the_old_one(envoy: Envoy) -> None:
    stream = envoy()
    # The batch SLO: its windows are not the ones test_response_path.py counts.
    sent = {
        "x-llm-d-slo-ttft-ms": "0.001",
        "x-slo-ttft-ms": "600000",
        "x-llm-d-inference-objective": "batch",
    }
    stream.send(request_headers("/v1/completions", sent), request_body(BODY, end_of_stream=True))
    answer, _ = stream.recv(2)
    decision_id = set_header(answer, "x-locus-decision-id")
    stream.send(response_headers(200), response_body(b"{}", end_of_stream=True))
    stream.recv(2)
    stream.close()
    runtime().recorder.flush()
    record = DecisionRecord.objects.get(pk=decision_id)
    assert record.ok is True and record.slo_met is False
