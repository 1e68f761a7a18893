"""docs/operations.md, "Add an admin without prompts": `createsuperuser --noinput` with the
DJANGO_SUPERUSER_* variables makes an admin who can sign in, and refuses a taken name."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from console.access.roles import roles_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "bob")
    monkeypatch.setenv("DJANGO_SUPERUSER_EMAIL", "bob@example.com")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-long-Passw0rd-for-bob")


def test_it_makes_an_admin_without_prompts(bob: None) -> None:
    call_command("createsuperuser", interactive=False, verbosity=0)
    user = User.objects.get(username="bob")
    assert "admin" in roles_of(user)
    client = Client()
    signed_in = client.post(
        "/accounts/login/", {"username": "bob", "password": "a-long-Passw0rd-for-bob"}
    )
    assert signed_in.status_code == 302
    assert client.get("/api/v1/me").json()["role"] == "admin"


def test_it_refuses_a_taken_username(bob: None) -> None:
    call_command("createsuperuser", interactive=False, verbosity=0)
    with pytest.raises(CommandError, match="already taken"):
        call_command("createsuperuser", interactive=False, verbosity=0)
