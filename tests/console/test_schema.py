"""The OpenAPI 3 schema at /api/schema/ is valid and documents every API route, and the copies
the dashboard is built from (frontend/openapi.json, frontend/src/api/schema.d.ts) are what
the server serves."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from openapi_spec_validator import validate

from tests.conftest import REPO

pytestmark = pytest.mark.django_db

FRONTEND = REPO / "frontend"
REGENERATE = "Regenerate both with `make api-schema` and commit them."


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


def _changed(committed: dict[str, Any], served: dict[str, Any]) -> list[str]:
    """The paths and component schemas that differ, for the failure message."""
    changed = []
    for section, a, b in (
        ("path", committed.get("paths", {}), served.get("paths", {})),
        (
            "schema",
            committed.get("components", {}).get("schemas", {}),
            served["components"]["schemas"],
        ),
    ):
        changed += [
            f"{section} {name}"
            for name in sorted(a.keys() | b.keys())
            if a.get(name) != b.get(name)
        ]
    return changed or ["(formatting or top-level fields)"]


def test_the_committed_openapi_schema_is_what_the_server_serves(tmp_path: Path) -> None:
    """frontend/openapi.json, byte for byte, is what `manage.py spectacular` writes now (the
    command `make api-schema` runs)."""
    if connection.vendor != "sqlite":
        # The committed schema is made on the embedded defaults (`make api-schema`). Django
        # bounds integer fields by the backend's column (SQLite 64-bit, PostgreSQL 32-bit), so
        # the `maximum` (and `format: int64`) of positive integer fields differ, nothing else.
        pytest.skip("the committed schema is generated on the embedded defaults (SQLite)")
    fresh = tmp_path / "openapi.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(fresh))
    committed = (FRONTEND / "openapi.json").read_bytes()
    if fresh.read_bytes() != committed:
        changed = _changed(json.loads(committed), json.loads(fresh.read_bytes()))
        pytest.fail(
            "frontend/openapi.json differs from the schema the server serves: "
            f"{', '.join(changed[:20])}{' ...' if len(changed) > 20 else ''}. {REGENERATE}"
        )


def _openapi_typescript() -> list[str]:
    """The openapi-typescript invocation of package.json's `gen:api` script (the generator the
    dashboard's types come from), its output option left off."""
    script = json.loads((FRONTEND / "package.json").read_text())["scripts"]["gen:api"]
    step = next(s for s in script.split("&&") if s.strip().startswith("openapi-typescript"))
    words = shlex.split(step)
    out = words.index("-o")
    return words[:out] + words[out + 2 :]


def test_the_committed_typescript_types_are_generated_from_the_committed_schema(
    tmp_path: Path,
) -> None:
    """frontend/src/api/schema.d.ts is what openapi-typescript makes of frontend/openapi.json."""
    command = _openapi_typescript()
    binary = FRONTEND / "node_modules" / ".bin" / command[0]
    if not binary.exists() or shutil.which("node") is None:
        pytest.skip("needs Node.js and frontend/node_modules (`make setup` installs them)")
    fresh = tmp_path / "schema.d.ts"
    subprocess.run(
        [str(binary), *command[1:], "-o", str(fresh)],
        cwd=FRONTEND,
        check=True,
        capture_output=True,
        timeout=240,
    )
    if fresh.read_bytes() != (FRONTEND / "src" / "api" / "schema.d.ts").read_bytes():
        pytest.fail(
            "frontend/src/api/schema.d.ts is not what openapi-typescript makes of "
            f"frontend/openapi.json. {REGENERATE}"
        )
