"""Sign-in throttling through the real login form (django-axes): repeated wrong passwords for
one account from one address lock that pair out with 429, even for the right password, while
the same account from elsewhere and other accounts still sign in."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db


def _sign_in(username: str, password: str, address: str = "198.51.100.7") -> Any:
    return Client(REMOTE_ADDR=address).post(
        "/accounts/login/", {"username": username, "password": password}
    )


def test_repeated_wrong_passwords_lock_the_account_from_that_address(settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 5
    User.objects.create_user("ada", password="right-password-1")
    User.objects.create_user("alan", password="right-password-2")
    for _ in range(4):
        assert _sign_in("ada", "guess").status_code == 200  # the form again, with an error
    assert _sign_in("ada", "guess").status_code == 429  # the fifth failure locks
    assert _sign_in("ada", "right-password-1").status_code == 429
    # Another address, or another account, is not locked out by it.
    assert _sign_in("ada", "right-password-1", address="203.0.113.9").status_code == 302
    assert _sign_in("alan", "right-password-2").status_code == 302


def test_a_successful_sign_in_resets_the_count(settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    User.objects.create_user("ada", password="right-password-1")
    for _ in range(2):
        assert _sign_in("ada", "guess").status_code == 200
    assert _sign_in("ada", "right-password-1").status_code == 302
    for _ in range(2):
        assert _sign_in("ada", "guess").status_code == 200
