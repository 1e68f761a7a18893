"""The router records each call's outcome with no client help: TTFT at the first token,
end-to-end at the end, ok, the node that served; into the decision record, the breakers and
the SLO windows; and the tokens of `usage` into its metrics."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import requests
from prometheus_client import REGISTRY

from console.placement.engine.runtime import Runtime
from console.placement.engine.writer import utcnow
from telemetry import slo_windows
from telemetry.slo_rules import Counts
from tests.console.placement.doors.router.conftest import recorded

pytestmark = pytest.mark.django_db
Post = Callable[..., requests.Response]
PROMPT = "Why is the sky blue? " * 20


def _tokens(node: str, kind: str) -> float:
    labels = {"node": node, "kind": kind}
    return REGISTRY.get_sample_value("locus_router_tokens_total", labels) or 0.0


def _windows() -> dict[tuple[str, str], Counts]:
    return dict(slo_windows.read_by_node(slo="interactive", now=utcnow(), seconds=60))


def test_a_streamed_call_records_ttft_at_the_first_token_and_e2e_at_the_end(
    post: Post, fleet: Runtime
) -> None:
    before = _windows()
    body = {"model": "m1", "prompt": PROMPT, "max_tokens": 6, "stream": True}
    answer = post("/v1/completions", body, stream=True)
    received = b"".join(answer.iter_content(None))
    assert b'"usage"' not in received  # asked of the node by the router, not shown
    node = answer.headers["x-locus-node"]
    record = recorded(fleet, answer.headers["x-locus-decision-id"])
    assert record.ok is True and record.slo_met is True and record.node == node
    assert record.ttft_ms is not None and record.e2e_ms is not None
    # Five more decode steps of 40 ms after the first token.
    assert record.e2e_ms - record.ttft_ms >= 5 * 40 * 0.9
    # (The SLO windows outlive a test: compare with what they held before.)
    was = before.get(("m1", node), Counts(requests=0, bad=0, errors=0))
    now = _windows()[("m1", node)]
    assert (now.requests - was.requests, now.bad - was.bad, now.errors - was.errors) == (1, 0, 0)
    assert fleet.breakers.state(node) == "closed"


def test_the_tokens_of_usage_are_counted(post: Post, fleet: Runtime) -> None:
    before = {n: _tokens(n, "completion") for n in ("n1", "n2")}
    for stream in (True, False):
        body = {"model": "m1", "prompt": PROMPT, "max_tokens": 3, "stream": stream}
        answer = post("/v1/completions", body)
        assert answer.status_code == 200
        recorded(fleet, answer.headers["x-locus-decision-id"])
    after = {n: _tokens(n, "completion") for n in ("n1", "n2")}
    assert sum(after.values()) - sum(before.values()) == 6


def test_a_chat_call_not_streamed_is_recorded_too(post: Post, fleet: Runtime) -> None:
    chat = {"model": "m1", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 4}
    answer = post("/v1/chat/completions", chat)
    record = recorded(fleet, answer.headers["x-locus-decision-id"])
    assert record.ok is True
    assert (
        record.e2e_ms is not None and record.e2e_ms >= (4 - 1) * 40 * 0.9
    )  # the first token ends the prefill
    assert record.ttft_ms is not None and record.ttft_ms <= record.e2e_ms
