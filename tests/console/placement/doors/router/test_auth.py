"""Who may call: a Locus service key sent as the OpenAI API key; anyone when the router is
open (LOCUS_ROUTER_OPEN)."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from console.access.keyring import digest_of, keyring
from console.placement.doors.router.app import RouterServer
from console.placement.doors.router.auth import bearer

pytestmark = pytest.mark.django_db(transaction=True)
BODY = {"model": "m1", "prompt": "Say something.", "max_tokens": 2}


def _call(router: RouterServer, key: str | None) -> requests.Response:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return requests.post(router.url + "/v1/completions", json=BODY, headers=headers, timeout=10)


def test_a_call_without_a_key_is_a_401(router: RouterServer) -> None:
    answer = _call(router, None)
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "invalid_api_key"


def test_a_wrong_key_is_a_401(router: RouterServer, service_key: str) -> None:
    # Not in the key ring: looked up in the database, off the loop, and not found.
    answer = _call(router, service_key + "x")
    assert answer.status_code == 401
    assert answer.json()["error"]["message"] == "Incorrect API key provided."


def test_a_key_whose_role_may_not_decide_is_a_403(router: RouterServer) -> None:
    from console.access.services import api_key_create

    secret = api_key_create(name="a-viewer", role="viewer").secret
    answer = _call(router, secret)
    assert answer.status_code == 403
    assert "service key" in answer.json()["error"]["message"]


def test_a_key_new_to_the_ring_is_looked_up_and_works(router: RouterServer) -> None:
    from console.access.services import api_key_create

    secret = api_key_create(name="fresh", role="service").secret
    assert keyring.cached(digest_of(secret)) is None
    assert _call(router, secret).status_code == 200


def test_an_open_router_takes_calls_without_a_key(router: RouterServer, settings: Any) -> None:
    settings.LOCUS_ROUTER_OPEN = True
    assert _call(router, None).status_code == 200
    assert _call(router, "anything").status_code == 200


@pytest.mark.parametrize(
    ("header", "token"),
    [(None, None), ("", None), ("Basic abc", None), ("Bearer ", None), ("bearer k1", "k1")],
)
def test_bearer_reads_only_a_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer(header) == token
