"""The router's limits: a body over LOCUS_ROUTER_MAX_BODY_BYTES (413), a compressed body
(415), and shedding when every eligible node is saturated (429)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import requests

pytestmark = pytest.mark.django_db
Post = Callable[..., requests.Response]
BODY = {"model": "m1", "prompt": "Say something.", "max_tokens": 2}


def test_a_body_over_the_limit_is_a_413(post: Post, settings: Any) -> None:
    settings.LOCUS_ROUTER_MAX_BODY_BYTES = 1000
    answer = post("/v1/completions", {**BODY, "prompt": "x" * 2000})
    assert answer.status_code == 413
    assert "LOCUS_ROUTER_MAX_BODY_BYTES" in answer.json()["error"]["message"]
    # Chunked (no Content-Length): refused once the bytes read pass the limit.
    chunks = iter([b'{"model": "m1", "prompt": "', b"x" * 1500, b'"}'])
    answer = post("/v1/completions", None, data=chunks)
    assert answer.status_code == 413
    assert post("/v1/completions", BODY).status_code == 200


def test_a_compressed_body_is_a_415(post: Post) -> None:
    answer = post("/v1/completions", BODY, headers={"content-encoding": "gzip"})
    assert answer.status_code == 415


def test_every_eligible_node_saturated_is_a_429(
    post: Post, settings: Any, set_loads: Callable[..., None]
) -> None:
    settings.LOCUS_ROUTER_SHED_QUEUE_DEPTH = 5
    set_loads(n1=(5, 60, 0.9, 0.0), n2=(9, 60, 0.9, 0.0))
    answer = post("/v1/completions", BODY)
    assert answer.status_code == 429
    error = answer.json()["error"]
    assert error["type"] == "rate_limit_error" and error["queue_depth"] == {"n1": 5, "n2": 9}
    set_loads(n1=(4, 60, 0.9, 0.0))
    assert post("/v1/completions", BODY).status_code == 200
