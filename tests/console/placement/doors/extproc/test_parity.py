"""A decision through the gateway and one through POST /api/v1/placements on the same state
give the same node, fallbacks and scores, once the REST caller hashes its prompt with the
one block function (optimizer/prompts.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import grpc
import numpy as np
import pytest

from console.inventory.services import topology_import
from console.placement.engine.runtime import reset_runtime, runtime
from optimizer.decide.scorers.guard import GuardedScorer
from optimizer.prompts import chat_text, prompt_blocks
from optimizer.topology_files import load_topology
from tests.conftest import TOPOLOGIES
from tests.console.placement.doors.extproc.envoy_client import (
    EnvoyStream,
    endpoints_of,
    request_body,
    request_headers,
)

pytestmark = pytest.mark.django_db
MESSAGES = [
    {"role": "system", "content": "You plan train journeys. " * 300},
    {"role": "user", "content": "Munich to Amsterdam, tomorrow morning?"},
]
LOADS = {  # a busy fleet: queue, running, KV use, age
    "fra_h100_1": (12, 100, 0.8, 0.0),
    "muc_l4_1": (0, 3, 0.2, 0.0),
    "muc_l40s_1": (4, 30, 0.6, 0.0),
    "euw_h100_1": (1, 20, 0.3, 0.0),
}


def test_gateway_and_rest_decide_alike(
    engine_settings: Any,
    channel: grpc.Channel,
    client_for: Any,
    set_loads: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topology = load_topology(TOPOLOGIES / "fleet-demo.yaml")
    topology_import(topology=topology)
    scored: list[dict[str, float]] = []
    real_score = GuardedScorer.score

    def recording_score(self: GuardedScorer, candidates: Any) -> Any:
        result = real_score(self, candidates)
        scored.append(dict(zip(candidates.names, map(float, result), strict=True)))
        return result

    monkeypatch.setattr(GuardedScorer, "score", recording_score)

    def fresh_state() -> None:
        reset_runtime()
        runtime().refresh()
        set_loads(**LOADS)

    fresh_state()
    stream = EnvoyStream(channel)
    body = {"model": "llama-3.1-8b", "messages": MESSAGES, "max_tokens": 300}
    stream.send(request_headers(), request_body(json.dumps(body).encode(), end_of_stream=True))
    gateway_endpoints = endpoints_of(stream.recv(2)[0])[0]
    stream.close()

    fresh_state()
    tokens, hashes = prompt_blocks(chat_text(MESSAGES))
    answer = client_for("service").post(
        "/api/v1/placements",
        {
            "model": "llama-3.1-8b",
            "source": "munich-app",
            "prompt_tokens": tokens,
            "max_output_tokens": 300,
            "prefix_hashes": list(hashes),
            "explain": True,
        },
        format="json",
    )
    assert answer.status_code == 200, answer.content
    rest = answer.json()
    by_node = {n.name: n.address for n in topology.nodes}
    assert gateway_endpoints == [by_node[n] for n in [rest["node"], *rest["fallbacks"]]]
    gateway_scores, rest_scores = scored
    assert gateway_scores.keys() == {c["node"] for c in rest["candidates"]}
    for candidate in rest["candidates"]:
        assert np.isclose(gateway_scores[candidate["node"]], candidate["score"])
    assert gateway_scores == rest_scores
