"""API keys: shown once, stored hashed, revocable, last-used time, and the command."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from console.access.keyring import keyring
from console.access.models import ApiKey

pytestmark = pytest.mark.django_db


def _bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_create_api_key_prints_a_working_key_once() -> None:
    out = io.StringIO()
    call_command("create_api_key", "router-1", "--role", "viewer", stdout=out)
    secret = out.getvalue().strip()
    key = ApiKey.objects.get(name="router-1")
    assert secret.startswith(f"lk_{key.prefix}_")
    assert secret not in (key.digest, key.prefix)  # only a digest is stored
    me = _bearer(secret).get("/api/v1/me")
    assert me.status_code == 200 and me.json()["role"] == "viewer"


def test_create_api_key_refuses_a_duplicate_name_and_bad_role() -> None:
    call_command("create_api_key", "dup", "--role", "service", stdout=io.StringIO())
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_api_key", "dup", "--role", "service", stdout=io.StringIO())
    with pytest.raises(CommandError):
        call_command("create_api_key", "x", "--role", "root", stdout=io.StringIO())


def test_an_admin_issues_and_revokes_a_key_over_the_api(client_for: Any) -> None:
    admin = client_for("admin")
    created = admin.post("/api/v1/api-keys", {"name": "svc", "role": "service"}, format="json")
    assert created.status_code == 201
    secret = created.json()["key"]
    listed = admin.get("/api/v1/api-keys").json()["results"]
    assert all("key" not in row and "digest" not in row for row in listed)
    service = _bearer(secret)
    assert service.get("/api/v1/me").status_code == 200
    revoked = admin.post(f"/api/v1/api-keys/{created.json()['id']}/revoke")
    assert revoked.json()["revoked_at"]
    keyring.invalidate()  # what the revoking transaction's commit does in production
    response = service.get("/api/v1/me")
    assert response.status_code == 401
    assert response.json()["message"] == "Invalid or revoked API key."


def test_last_used_time_is_recorded(client_for: Any) -> None:
    from console.access.services import api_key_create

    issued = api_key_create(name="tracked", role="service")
    assert issued.api_key.last_used_at is None
    _bearer(issued.secret).get("/api/v1/me")
    keyring.flush_usage()
    issued.api_key.refresh_from_db()
    assert issued.api_key.last_used_at is not None


def test_a_wrong_key_gets_401_with_a_bearer_challenge() -> None:
    response = _bearer("lk_nope_nope").get("/api/v1/nodes")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
