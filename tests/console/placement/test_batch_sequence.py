"""A batch decides exactly as the same requests sent one by one (issue #14): between the
requests of a batch the engine counts each pick as queued on its node and indexes its prompt
blocks, as it does between single requests."""

from __future__ import annotations

from typing import Any

import pytest

from console.placement.engine.runtime import reset_runtime, runtime

pytestmark = pytest.mark.django_db


def _requests() -> list[dict[str, Any]]:
    # Shared prefixes and growing prompts: later picks depend on earlier ones through the
    # queue counts and the prefix index.
    return [
        {
            "model": "llama-3.1-8b",
            "source": "munich-app" if i % 3 else "us-batch",
            "prompt_tokens": 400 + 97 * i,
            "max_output_tokens": 64 + i,
            "prefix_hashes": [i % 4, 100 + i % 2],
            "session_id": f"s{i}",
        }
        for i in range(40)
    ]


@pytest.mark.parametrize("policy", ["prefix-aware", "weighted-score", "round-robin"])
def test_a_batch_decides_as_the_same_requests_in_sequence(
    policy: str, example_engine: Any, engine_settings: Any, client_for: Any
) -> None:
    engine_settings.LOCUS_DEFAULT_POLICY = policy
    reset_runtime()
    runtime().refresh()
    service = client_for("service")
    batch = service.post("/api/v1/placements:batch", {"requests": _requests()}, format="json")
    assert batch.status_code == 200, batch.content
    batched = [d["node"] for d in batch.json()["decisions"]]

    reset_runtime()
    runtime().refresh()
    single = []
    for body in _requests():
        answer = service.post("/api/v1/placements", body, format="json")
        assert answer.status_code == 200, answer.content
        single.append(answer.json()["node"])
    assert batched == single
    assert len(set(single)) > 1, "the requests should spread over several nodes"
