"""The response path: the picker records each outcome with no client help (status, TTFT at
the first body chunk, end-to-end at end of stream, the endpoint that served) into the same
breakers, records and SLO windows as POST /api/v1/placements/{id}/outcome."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from console.placement.engine.runtime import runtime
from console.placement.engine.writer import utcnow
from console.placement.models import DecisionRecord
from optimizer.decide.state.snapshot import PolicyRef
from telemetry import slo_windows
from telemetry.slo_rules import Counts
from tests.console.placement.doors.extproc.envoy_client import (
    EnvoyStream,
    echoed,
    endpoints_of,
    request_body,
    request_headers,
    response_body,
    response_headers,
    set_header,
)

pytestmark = pytest.mark.django_db
Envoy = Callable[[], EnvoyStream]
BODY = json.dumps({"model": "llama-3.1-8b", "prompt": "Why is the sky blue?"}).encode()
SSE = [b'data: {"choices": [{"text": "Ray"}]}\n\n', b'data: {"choices": []}\n\n', b"data: [DONE]"]


def _placed(
    envoy: Envoy, *, subset: list[str] | None = None, headers: dict[str, str] | None = None
) -> tuple[EnvoyStream, str, list[str]]:
    stream = envoy()
    stream.send(
        request_headers("/v1/completions", headers, subset=subset),
        request_body(BODY, end_of_stream=True),
    )
    answer = stream.recv(2)[0]
    decision_id = set_header(answer, "x-locus-decision-id")
    assert decision_id is not None
    return stream, decision_id, endpoints_of(answer)[0]


def test_a_streamed_answer_is_echoed_and_its_outcome_recorded(envoy: Envoy) -> None:
    stream, decision_id, endpoints = _placed(envoy)
    stream.send(response_headers(200, served=endpoints[0]))
    receipt = stream.recv()[0].response_headers.response.header_mutation.set_headers
    assert {o.header.key: o.header.raw_value.decode() for o in receipt} == {
        "x-locus-decision-id": decision_id
    }
    stream.send(response_body(SSE[0], end_of_stream=False))
    time.sleep(0.05)  # decode time between the first token and the end
    stream.send(
        response_body(SSE[1], end_of_stream=False), response_body(SSE[2], end_of_stream=True)
    )
    answers = stream.recv(3)
    assert echoed(answers, request=False) == b"".join(SSE)
    assert answers[-1].response_body.response.body_mutation.streamed_response.end_of_stream
    assert stream.close() == []
    runtime().recorder.flush()
    record = DecisionRecord.objects.get(pk=decision_id)
    assert record.ok is True and record.slo_met is True
    assert record.ttft_ms is not None and record.e2e_ms is not None
    assert record.e2e_ms >= record.ttft_ms + 40
    counts = slo_windows.read_by_node(slo="interactive", now=utcnow(), seconds=60)
    assert counts[("llama-3.1-8b", record.node)] == Counts(requests=1, bad=0, errors=0)


def test_failed_responses_open_the_node_breaker(envoy: Envoy, addresses: dict[str, str]) -> None:
    only = [addresses["fra-h100-2"]]
    for _ in range(3):  # engine_settings: 3 consecutive failures open a breaker
        stream, _, endpoints = _placed(envoy, subset=only)
        assert endpoints == only
        stream.send(response_headers(503, served=only[0]), response_body(b"{}", end_of_stream=True))
        stream.recv(2)
        stream.close()
    assert runtime().breakers.state("fra-h100-2") == "open"
    stream = envoy()
    stream.send(request_headers("/v1/completions", subset=only))
    stream.send(
        request_body(BODY[:10], end_of_stream=False), request_body(BODY[10:], end_of_stream=True)
    )
    answer = stream.recv()[0]
    assert answer.immediate_response.status.code == 503
    assert json.loads(answer.immediate_response.body)["reasons"] == {"fra-h100-2": "breaker_open"}


def test_an_answer_from_a_fallback_is_that_nodes_and_counts_against_the_pick(
    envoy: Envoy, addresses: dict[str, str], set_loads: Callable[..., None]
) -> None:
    # fra-h100-3 idle, fra-h100-4 busy: the pick is fra-h100-3 every time.
    set_loads(fra_h100_3=(0, 0, 0.1, 0.0), fra_h100_4=(60, 100, 0.9, 0.0))
    subset = [addresses["fra-h100-3"], addresses["fra-h100-4"]]
    board = runtime().breakers
    for _ in range(3):  # engine_settings: 3 consecutive failures open a breaker
        assert board.state("fra-h100-3") == "closed"
        stream, decision_id, endpoints = _placed(envoy, subset=subset)
        assert endpoints == subset
        # Envoy retried: the pick failed, the fallback served.
        stream.send(response_headers(200, served=endpoints[1]))
        stream.send(response_body(b"ok", end_of_stream=True))
        stream.recv(2)
        stream.close()
    assert board.state("fra-h100-3") == "open"
    assert board.state("fra-h100-4") == "closed"
    runtime().recorder.flush()
    assert DecisionRecord.objects.get(pk=decision_id).ok is True


def test_a_per_request_ttft_target_judges_the_outcome(envoy: Envoy) -> None:
    stream, decision_id, endpoints = _placed(envoy, headers={"x-slo-ttft-ms": "1"})
    stream.send(response_headers(200, served=endpoints[0]))
    time.sleep(0.01)
    stream.send(response_body(b"late", end_of_stream=True))
    stream.recv(2)
    stream.close()
    runtime().recorder.flush()
    record = DecisionRecord.objects.get(pk=decision_id)
    assert record.ok is True and record.slo_met is False


def test_a_stream_that_ends_after_an_error_status_still_records_it(envoy: Envoy) -> None:
    stream, decision_id, endpoints = _placed(envoy)
    stream.send(response_headers(500, served=endpoints[0]))
    stream.recv()
    stream.close()  # Envoy gives up before the body
    runtime().recorder.flush()
    assert DecisionRecord.objects.get(pk=decision_id).ok is False


def test_a_session_token_keeps_a_session_on_one_canary_arm(
    envoy: Envoy, gateway_fleet: Any, client_for: Any
) -> None:
    """x-session-token is the canary's sticky key, as session_id is on the REST path: the
    same session lands on the same arm through either."""
    snap = gateway_fleet.engine.snapshot
    canary = PolicyRef(name="least-loaded", version="v1", spec="least-loaded", version_id=None)
    gateway_fleet.engine.install(
        dataclasses.replace(
            snap, rollout=dataclasses.replace(snap.rollout, canary=canary, canary_share=0.5)
        )
    )
    arms: dict[str, set[str]] = {}
    for session in range(12):
        for _ in range(2):
            stream, decision_id, _ = _placed(envoy, headers={"x-session-token": f"s{session}"})
            stream.close()
            runtime().recorder.flush()
            arms.setdefault(f"s{session}", set()).add(
                DecisionRecord.objects.get(pk=decision_id).arm
            )
    assert all(len(seen) == 1 for seen in arms.values())  # sticky
    assert {arm for seen in arms.values() for arm in seen} == {"active", "canary"}
    service = client_for("service")
    for session, seen in arms.items():
        rest = service.post(
            "/api/v1/placements",
            {
                "model": "llama-3.1-8b",
                "source": "munich-app",
                "prompt_tokens": 5,
                "max_output_tokens": 16,
                "session_id": session,
            },
            format="json",
        )
        assert {rest.json()["arm"]} == seen
