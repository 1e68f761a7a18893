"""The emulated node speaks OpenAI as vLLM does, over real HTTP: answers, streams, errors."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
import requests

from optimizer.emulator import FleetThread
from optimizer.emulator.openai import MAX_BODY_BYTES
from optimizer.prompts import prompt_blocks
from optimizer.topology import Topology
from tests.optimizer.fleets import TINY, tiny_topology

PROMPT = "Where should this request run? " * 10  # 310 characters: 78 tokens


def _post(emulator: FleetThread, path: str, body: Any, **kwargs: Any) -> requests.Response:
    url = emulator.urls["core-l"] + path
    if isinstance(body, bytes):
        return requests.post(url, data=body, timeout=10, **kwargs)
    return requests.post(url, json=body, timeout=10, **kwargs)


def _events(response: requests.Response) -> list[Any]:
    assert response.headers["Content-Type"].startswith("text/event-stream")
    lines = [line for line in response.text.split("\n\n") if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in lines[:-1]]


def test_a_completion_answers_with_choices_and_usage(emulator: FleetThread) -> None:
    response = _post(
        emulator, "/v1/completions", {"model": "m1", "prompt": PROMPT, "max_tokens": 7}
    )
    assert response.status_code == 200
    assert response.headers["x-locus-node"] == "core-l"
    body = response.json()
    assert body["id"].startswith("cmpl-") and body["object"] == "text_completion"
    assert body["model"] == "m1" and isinstance(body["created"], int)
    [choice] = body["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "length"
    assert len(choice["text"]) == 7 * 4  # 4 characters a token
    assert body["usage"] == {"prompt_tokens": 78, "completion_tokens": 7, "total_tokens": 85}


def test_a_chat_completion_answers_with_an_assistant_message(emulator: FleetThread) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]
    response = _post(
        emulator, "/v1/chat/completions", {"model": "m1", "messages": messages, "max_tokens": 3}
    )
    body = response.json()
    assert body["id"].startswith("chatcmpl-") and body["object"] == "chat.completion"
    [choice] = body["choices"]
    assert choice["message"]["role"] == "assistant" and len(choice["message"]["content"]) == 12
    expected = prompt_blocks(f"<|system|>\nBe brief.\n<|user|>\n{PROMPT}\n")[0]
    assert body["usage"]["prompt_tokens"] == expected
    assert body["usage"]["completion_tokens"] == 3


def test_max_tokens_defaults_to_16_and_token_ids_count_exactly(emulator: FleetThread) -> None:
    body = _post(emulator, "/v1/completions", {"model": "m1", "prompt": list(range(600))}).json()
    assert body["usage"] == {"prompt_tokens": 600, "completion_tokens": 16, "total_tokens": 616}
    chat = {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
    assert _post(emulator, "/v1/chat/completions", chat).json()["usage"]["completion_tokens"] == 16
    batch_of_one = {"model": "m1", "prompt": [PROMPT], "max_completion_tokens": 2}
    assert _post(emulator, "/v1/completions", batch_of_one).json()["usage"]["prompt_tokens"] == 78


def test_a_streamed_completion_sends_one_chunk_a_token_then_usage_and_done(
    emulator: FleetThread,
) -> None:
    body = {
        "model": "m1",
        "prompt": PROMPT,
        "max_tokens": 5,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    events = _events(_post(emulator, "/v1/completions", body))
    *tokens, usage = events
    assert len(tokens) == 5 and len({e["id"] for e in events}) == 1
    assert all(e["object"] == "text_completion" for e in events)
    assert [len(e["choices"][0]["text"]) for e in tokens] == [4] * 5
    assert [e["choices"][0]["finish_reason"] for e in tokens] == [None] * 4 + ["length"]
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 78, "completion_tokens": 5, "total_tokens": 83}


def test_a_streamed_chat_opens_with_the_role_and_omits_usage_unless_asked(
    emulator: FleetThread,
) -> None:
    body = {
        "model": "m1",
        "messages": [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
        "max_tokens": 3,
        "stream": True,
    }
    events = _events(_post(emulator, "/v1/chat/completions", body))
    assert all(e["object"] == "chat.completion.chunk" for e in events)
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    contents = [e["choices"][0]["delta"]["content"] for e in events[1:]]
    assert len(contents) == 3 and all(len(c) == 4 for c in contents)
    assert events[-1]["choices"][0]["finish_reason"] == "length"
    assert not any("usage" in e for e in events)


def test_models_and_health(emulator: FleetThread) -> None:
    models = requests.get(emulator.urls["edge-s"] + "/v1/models", timeout=5).json()
    assert models["object"] == "list"
    [model] = models["data"]
    assert model["id"] == "m1" and model["object"] == "model"
    # TINY's small accelerator: 24 GiB less 16 GiB of weights, at 1000 bytes a token.
    assert model["max_model_len"] == 8 * 1024**3 // 1000
    health = requests.get(emulator.urls["edge-s"] + "/health", timeout=5)
    assert health.status_code == 200 and health.headers["x-locus-node"] == "edge-s"


def _error(response: requests.Response, status: int) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == status
    return str(error["message"])


def test_a_model_the_node_does_not_serve_is_404(emulator: FleetThread) -> None:
    message = _error(_post(emulator, "/v1/completions", {"model": "gpt-4", "prompt": "hi"}), 404)
    assert "gpt-4" in message and "m1" in message
    assert _error(_post(emulator, "/v1/embeddings", {"model": "m1"}), 404)
    wrong_method = requests.get(emulator.urls["core-l"] + "/v1/completions", timeout=5)
    assert _error(wrong_method, 405)


@pytest.mark.parametrize(
    ("body", "found"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b"\xff\xfe\x00", "not valid JSON"),
        (b"[" * 5000 + b"]" * 5000, "not valid JSON"),
        ({"prompt": "hi"}, "model"),
        ({"model": "m1"}, "prompt"),
        ({"model": "m1", "prompt": ""}, "empty"),
        ({"model": "m1", "prompt": "hi\x00there"}, "NUL"),
        ({"model": "m\x00", "prompt": "hi"}, "NUL"),
        ({"model": "m1", "prompt": "hi", "max_tokens": 0}, "max_tokens"),
        ({"model": "m1", "prompt": "hi", "max_tokens": "5"}, "max_tokens"),
        ({"model": "m1", "prompt": "hi", "max_tokens": True}, "max_tokens"),
        ({"model": "m1", "prompt": "hi", "max_tokens": 10**30}, "max_tokens"),
        (b'{"model": "m1", "prompt": "hi", "max_tokens": 1e999}', "not valid JSON"),
        ({"model": "m1", "prompt": "hi", "n": 2}, "n"),
        ({"model": "m1", "prompt": ["a", "b"]}, "one prompt"),
        ({"model": "m1", "prompt": [1, 2**32]}, "token ids"),
        ({"model": "m1", "prompt": "hi", "stream": "yes"}, "stream"),
        ({"model": "m1", "prompt": "hi", "max_tokens": 10**9 - 1}, "max_tokens"),
    ],
)
def test_a_bad_completion_body_is_400(emulator: FleetThread, body: Any, found: str) -> None:
    assert found in _error(_post(emulator, "/v1/completions", body), 400)


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m1"},
        {"model": "m1", "messages": []},
        {"model": "m1", "messages": [{"content": "no role"}]},
        {"model": "m1", "messages": [{"role": "user", "content": 5}]},
        {"model": "m1", "messages": [{"role": "user", "content": "a\x00b"}]},
        {"model": "m1", "messages": "hi"},
    ],
)
def test_a_bad_chat_body_is_400(emulator: FleetThread, body: Any) -> None:
    _error(_post(emulator, "/v1/chat/completions", body), 400)


def test_an_unknown_or_unlinked_source_is_400(emulator: FleetThread) -> None:
    body = {"model": "m1", "prompt": "hi"}
    headers = {"x-locus-source": "nobody"}
    assert "nobody" in _error(_post(emulator, "/v1/completions", body, headers=headers), 400)
    # TINY has no link between its cloud and device sites.
    with FleetThread(_with_cloud_source(), port_base=0) as other:
        url = other.urls["dev-s"] + "/v1/completions"
        response = requests.post(url, json=body, headers={"x-locus-source": "cloud"}, timeout=5)
        assert "no link" in _error(response, 400)


def _with_cloud_source() -> Topology:
    cloud = {"name": "cloud", "site": "c-cloud", "share": 1, "slo": "std"}
    return tiny_topology(sources=[*TINY["sources"], cloud])


def test_a_sequence_beyond_the_nodes_kv_room_is_400() -> None:
    # Half a GiB of KV at 1000 bytes a token: 536870 tokens.
    small = [{"name": "small", "memory_gib": 16.5}, {"name": "big", "memory_gib": 80}]
    with FleetThread(tiny_topology(accelerators=small), port_base=0) as served:
        url = served.urls["edge-s"] + "/v1/completions"
        body = {"model": "m1", "prompt": list(range(1000)), "max_tokens": 535_871}
        message = _error(requests.post(url, json=body, timeout=5), 400)
        assert "maximum context length is 536870 tokens" in message
        body["max_tokens"] = 535_870
        body["stream"] = True
        with requests.post(url, json=body, timeout=5, stream=True) as fits:
            assert fits.status_code == 200


def test_a_body_over_the_limit_is_413_even_when_compressed(emulator: FleetThread) -> None:
    big = b'{"model": "m1", "prompt": "' + b"x" * MAX_BODY_BYTES + b'"}'
    _error(_post(emulator, "/v1/completions", big), 413)
    bomb = gzip.compress(big)  # ~8 KiB on the wire
    assert len(bomb) < 100_000
    response = _post(emulator, "/v1/completions", bomb, headers={"Content-Encoding": "gzip"})
    _error(response, 413)
