"""The OpenAPI 3 schema at /api/schema/ is valid and documents every API route."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db


def test_the_openapi_schema_validates(client_for: Any) -> None:
    response = client_for("viewer").get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert schema["openapi"].startswith("3.")
    for path in ("/api/v1/nodes", "/api/v1/nodes/{name}/drain", "/api/v1/topology"):
        assert path in schema["paths"], path


def test_the_schema_documents_bearer_api_keys(client_for: Any) -> None:
    schema = client_for("viewer").get("/api/schema/?format=json").json()
    assert schema["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    assert {"apiKey": []} in schema["paths"]["/api/v1/placements"]["post"]["security"]


def test_the_docs_page_loads_swagger_from_this_server(client_for: Any) -> None:
    """Offline docs: every script and stylesheet of /api/docs/ is one of this server's static
    files (collected by `collectstatic`, served by WhiteNoise), none from a CDN."""
    import re

    from django.contrib.staticfiles import finders

    viewer = client_for("viewer")
    page = viewer.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', html)
    assert assets, html
    for url in assets:
        assert url.startswith("/static/"), url
        assert finders.find(url.removeprefix("/static/")), url


def test_the_schema_needs_a_signed_in_caller(client_for: Any) -> None:
    response = client_for(None).get("/api/schema/?format=json")
    assert response.status_code == 401
    assert "message" in response.json()


def test_the_schema_documents_the_bearer_key_and_every_error_response(client_for: Any) -> None:
    schema = client_for("viewer").get("/api/schema/?format=json").json()
    assert schema["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["apiKey"]["description"],
    }
    error = "#/components/schemas/Error"
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert {"apiKey": []} in operation["security"], (method, path)
            for status in ("400", "401", "403", "404", "409", "415", "503"):
                assert status in operation["responses"], (method, path, status)
            refs = operation["responses"]["401"]["content"]["application/json"]["schema"]
            assert refs == {"$ref": error}
    assert "message" in schema["components"]["schemas"]["Error"]["required"]
