"""The router's errors are OpenAI's shape, with Locus's extra fields inside `error`."""

from __future__ import annotations

import json

from console.placement.doors.router.errors import RouterError


def test_an_error_has_openais_four_fields_and_its_extras() -> None:
    error = RouterError(503, "No node.", code="no_eligible_node", reasons={"n1": "residency"})
    assert error.body() == {
        "error": {
            "message": "No node.",
            "type": "service_unavailable_error",
            "param": None,
            "code": "no_eligible_node",
            "reasons": {"n1": "residency"},
        }
    }


def test_its_response_carries_the_status_json_and_headers() -> None:
    response = RouterError(404, "Unknown model.", param="model").with_headers({"x-a": "1"})
    answer = response.response()
    assert answer.status == 404 and answer.content_type == "application/json"
    assert answer.headers["x-a"] == "1"
    assert isinstance(answer.body, bytes)
    assert json.loads(answer.body)["error"]["type"] == "not_found_error"


def test_a_status_without_a_named_type_is_a_server_error() -> None:
    assert RouterError(500, "Failed.").body()["error"]["type"] == "server_error"
