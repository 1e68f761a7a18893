"""A prompt of about 100,000 tokens (a ~400 KB body, 4 characters a token as
`optimizer/prompts.py` counts) through the router's HTTP entry point to an emulated node:
placed on its full size, and forwarded whole (the node counts every token)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import requests

from console.placement.engine.runtime import Runtime
from optimizer.emulator.text import trace_prompt
from tests.console.placement.doors.router.conftest import recorded

pytestmark = pytest.mark.django_db
TOKENS = 100_000


def test_a_100k_token_prompt_is_placed_and_reaches_the_node_whole(
    post: Callable[..., requests.Response], fleet: Runtime
) -> None:
    prompt = trace_prompt(list(range(1, 200)), TOKENS)
    body: dict[str, Any] = {"model": "m1", "prompt": prompt, "max_tokens": 1}
    answer = post("/v1/completions", body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["usage"]["prompt_tokens"] == TOKENS
    record = recorded(fleet, answer.headers["x-locus-decision-id"])
    assert record.prompt_tokens == TOKENS
    assert record.node == answer.headers["x-locus-node"]
    assert record.ok
