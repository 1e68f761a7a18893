"""One call from start to end: its source, its decision header, every bad input with its code
in OpenAI's error shape, and a client that goes away cancelling the node's request."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
from prometheus_client import REGISTRY

from console.placement.doors.router.app import RouterServer
from console.placement.engine.runtime import Runtime
from console.placement.models import DecisionRecord
from optimizer.emulator import EmulatedFleet, FleetThread
from tests.console.placement.doors.router.conftest import eventually, recorded

pytestmark = pytest.mark.django_db
Post = Callable[..., requests.Response]
BODY = {"model": "m1", "prompt": "Say something.", "max_tokens": 2}


def _error(answer: requests.Response, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    error: dict[str, Any] = answer.json()["error"]
    assert {"message", "type", "param", "code"} <= set(error)
    return error


def test_an_answer_names_its_decision(post: Post, fleet: Runtime) -> None:
    answer = post("/v1/completions", BODY)
    assert answer.status_code == 200
    record = recorded(fleet, answer.headers["x-locus-decision-id"])
    assert record.source == "app" and record.decided_by == "key:router-client"


def test_the_source_comes_from_a_header_or_a_body_field_else_the_default(
    post: Post, fleet: Runtime
) -> None:
    header = post("/v1/completions", BODY, headers={"x-locus-source": "nowhere"})
    assert _error(header, 400)["param"] == "source"
    field = post("/v1/completions", {**BODY, "locus_source": "nowhere"})
    assert "nowhere" in _error(field, 400)["message"]
    assert _error(post("/v1/completions", {**BODY, "locus_source": 7}), 400)["param"] == (
        "locus_source"
    )
    named = post("/v1/completions", {**BODY, "locus_source": "app"})
    assert named.status_code == 200


def test_no_source_at_all_is_a_400(fleet: Runtime, service_key: str) -> None:
    server = RouterServer(port=0, source=None).start()
    try:
        answer = requests.post(
            server.url + "/v1/completions",
            json=BODY,
            headers={"Authorization": f"Bearer {service_key}"},
            timeout=10,
        )
    finally:
        server.stop()
    assert "No request source" in _error(answer, 400)["message"]


@pytest.mark.parametrize(
    ("raw", "status", "words"),
    [
        (b"{not json", 400, "could not parse"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"model": "m1"}', 400, "prompt"),
        (b'{"model": "m1", "prompt": "x", "max_tokens": 0}', 400, "max_tokens"),
        (b'{"model": "nope", "prompt": "x"}', 404, "Unknown model"),
    ],
)
def test_a_bad_body_gets_its_code(post: Post, raw: bytes, status: int, words: str) -> None:
    answer = post("/v1/completions", None, data=raw, headers={"content-type": "application/json"})
    error = _error(answer, status)
    assert words in error["message"] or words in str(error.get("errors"))
    if status == 404:
        assert error["code"] == "model_not_found" and error["param"] == "model"


def test_nothing_eligible_is_a_503_with_the_reasons(post: Post) -> None:
    # m2 runs only in the US; the interactive SLO keeps data in the EU.
    error = _error(post("/v1/completions", {**BODY, "model": "m2"}), 503)
    assert error["code"] == "no_eligible_node"
    assert error["reasons"] == {
        "n1": "model_not_served",
        "n2": "model_not_served",
        "us1": "residency",
    }


def _disconnects() -> float:
    return REGISTRY.get_sample_value("locus_router_client_disconnects_total") or 0.0


def _busy(fleet: FleetThread) -> int:
    def count(f: EmulatedFleet) -> int:
        return sum(e.running + e.waiting for i in range(3) for e in f.engines(i))

    return fleet.call(count)


def test_a_client_that_goes_away_cancels_the_nodes_request(
    post: Post, emulated: FleetThread, fleet: Runtime
) -> None:
    before = _disconnects()
    body = {**BODY, "max_tokens": 5000, "stream": True}  # 200 s of decoding
    answer = post("/v1/completions", body, stream=True)
    lines = answer.iter_lines()
    assert next(lines).startswith(b"data: ")  # a token reached the client
    assert _busy(emulated) == 1
    decision_id = answer.headers["x-locus-decision-id"]
    answer.close()
    eventually(lambda: _busy(emulated) == 0)  # the node freed the sequence
    eventually(lambda: _disconnects() == before + 1)
    time.sleep(0.05)
    fleet.recorder.flush()
    # Not an outcome: the node did nothing wrong.
    assert DecisionRecord.objects.get(pk=decision_id).ok is None
