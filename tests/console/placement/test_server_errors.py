"""An unexpected exception answers 500 in the API's JSON error shape on machine paths, and
Django's own error page on the dashboard's (handler500)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory

from console.api.errors import INTERNAL_ERROR_MESSAGE, server_error
from tests.console.placement.conftest import SMALL_REQUEST


@pytest.mark.django_db
def test_a_failing_api_view_answers_json_500(
    client_for: Any, example_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(data: Any) -> Any:
        raise RuntimeError("engine bug")

    monkeypatch.setattr("console.placement.doors.handlers.decide_one", broken)
    client = client_for("service")
    client.raise_request_exception = False
    response = client.post(
        "/api/v1/placements",
        SMALL_REQUEST,
        format="json",
    )
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"message": INTERNAL_ERROR_MESSAGE}


def test_dashboard_pages_keep_the_html_error_page() -> None:
    response = server_error(RequestFactory().get("/nodes"))
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")


def test_unknown_api_paths_answer_json_404(client_for: Any) -> None:
    response = client_for("service").post("/api/v1/placements/", {}, format="json")
    assert response.status_code == 404
    assert response.json() == {"message": "No such endpoint: /api/v1/placements/"}


@pytest.mark.django_db
def test_a_body_over_the_limit_answers_json_400(client_for: Any, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = client_for("service").post(
        "/api/v1/placements:batch",
        data='{"requests": [' + ",".join(["{}"] * 600) + "]}",
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json() == {"message": "Bad request."}


def test_an_unparsable_body_names_the_problem_under_body(client_for: Any) -> None:
    response = client_for("service").post(
        "/api/v1/placements", data="{not json", content_type="application/json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["message"].startswith("JSON parse error") and body["errors"]["body"]


@pytest.mark.django_db
def test_the_rollout_answers_on_an_empty_inventory(engine_settings: Any, client_for: Any) -> None:
    """A fresh console has no fleet, so the engine has no snapshot: the Policies page still
    learns who would serve (it was a 500)."""
    response = client_for("viewer").get("/api/v1/rollout")
    assert response.status_code == 200
    assert response.json()["active"] == "weighted-score@builtin"
