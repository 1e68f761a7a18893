"""The OpenAI wire format as vLLM's server speaks it: request bodies in, answers and chunks out.

Requests (`parse_request`): `/v1/completions` takes `prompt` as a string or a list of token
ids (a batch of one, `[prompt]`, is accepted; larger batches are not); `/v1/chat/completions`
takes `messages` (text or text parts). Both take `model`, `max_tokens` (chat also
`max_completion_tokens`), `stream`, `stream_options.include_usage` and `n` (1 only); other
fields are ignored, as an engine ignores sampling settings it has no use for. Prompt tokens
and block ids come from `optimizer.prompts` (4 characters a token; token ids exactly).

Answers follow vLLM's OpenAI server (vllm/entrypoints/openai/protocol.py): `text_completion`
and `chat.completion` objects with `usage`; streamed `text_completion` and
`chat.completion.chunk` chunks as server-sent events, the chat stream opening with the
assistant role, the last token's chunk carrying `finish_reason: "length"`, a `usage` chunk
with no choices when `stream_options.include_usage` is set, then `data: [DONE]`. Errors are
`{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from optimizer.prompts import chat_text, prompt_blocks, prompt_token_blocks

# A request body larger than this is refused with 413 before it is parsed: room for a
# 128k-token context as text (512 KiB at 4 characters a token) even when JSON escapes every
# character (\uXXXX, 6 bytes each), with margin.
MAX_BODY_BYTES = 8 * 1024 * 1024
# Output tokens when the request names none: OpenAI's and vLLM's default for
# /v1/completions. Chat defaults to "until the context ends" there, which a filler without an
# end-of-sequence token never reaches, so chat takes the same 16.
DEFAULT_MAX_TOKENS = 16
# The largest max_tokens accepted (a node's KV room usually refuses far less; see server).
MAX_OUTPUT_TOKENS = 1_000_000
_TOKEN_ID_LIMIT = 2**32
_ERROR_TYPES = {
    400: "BadRequestError",
    404: "NotFoundError",
    405: "MethodNotAllowedError",
    413: "RequestTooLargeError",
    503: "ServiceUnavailableError",
}


class ApiError(Exception):
    """An answer other than 200, in OpenAI's error shape."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param

    def body(self) -> bytes:
        return error_body(self.status, self.message, self.param)


def error_body(status: int, message: str, param: str | None = None) -> bytes:
    error = {
        "message": message,
        "type": _ERROR_TYPES.get(status, "Error"),
        "param": param,
        "code": status,
    }
    return orjson.dumps({"error": error})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class _StreamOptions(_Strict):
    include_usage: bool | None = None


class _Body(_Strict):
    model: str = Field(min_length=1, max_length=512)
    stream: bool | None = None
    stream_options: _StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_OUTPUT_TOKENS)
    n: int | None = Field(default=None, ge=1, le=1)


class _Completion(_Body):
    prompt: Any


class _Message(_Strict):
    role: str = Field(min_length=1, max_length=64)
    content: str | list[dict[str, Any]] | None = None


class _Chat(_Body):
    messages: list[_Message] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=MAX_OUTPUT_TOKENS)


@dataclass(frozen=True, slots=True)
class Ask:
    """A parsed request: what the node model needs and how to answer."""

    chat: bool
    model: str
    prompt_tokens: int
    hashes: tuple[int, ...]
    max_tokens: int
    stream: bool
    include_usage: bool
    # The body's `kv_transfer_params` (vLLM's P/D hand-off, optimizer.emulator.phases).
    kv_transfer: dict[str, Any] | None = None


def parse_request(raw: bytes, *, chat: bool) -> Ask:
    """A body of `/v1/chat/completions` (`chat`) or `/v1/completions`; ApiError(400) if bad."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, f"The body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The body must be a JSON object.")
    try:
        body: _Chat | _Completion = (_Chat if chat else _Completion).model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5]
        ]
        raise ApiError(400, "Invalid request: " + "; ".join(problems)) from None
    if "\x00" in body.model:
        raise ApiError(400, "model: holds a NUL character (U+0000)", "model")
    if isinstance(body, _Chat):
        text = chat_text([m.model_dump() for m in body.messages])
        if "\x00" in text:
            raise ApiError(400, "messages: hold a NUL character (U+0000)", "messages")
        tokens, hashes = prompt_blocks(text)
        max_tokens = body.max_completion_tokens or body.max_tokens
    else:
        tokens, hashes = _prompt(body.prompt)
        max_tokens = body.max_tokens
    if tokens == 0:
        raise ApiError(400, "The prompt is empty.", "messages" if chat else "prompt")
    options = body.stream_options
    return Ask(
        chat=chat,
        model=body.model,
        prompt_tokens=tokens,
        hashes=hashes,
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        stream=bool(body.stream),
        include_usage=bool(options and options.include_usage),
        kv_transfer=kv if isinstance(kv := data.get("kv_transfer_params"), dict) else None,
    )


def _prompt(value: Any) -> tuple[int, tuple[int, ...]]:
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str | list):
        value = value[0]  # a batch of one prompt
    if isinstance(value, str):
        if "\x00" in value:
            raise ApiError(400, "prompt: holds a NUL character (U+0000)", "prompt")
        return prompt_blocks(value)
    if isinstance(value, list) and all(type(t) is int and 0 <= t < _TOKEN_ID_LIMIT for t in value):
        return prompt_token_blocks(value)
    raise ApiError(
        400,
        "prompt: expected a string or a list of token ids (0 <= id < 2**32), one prompt "
        "per request",
        "prompt",
    )


class Answer:
    """The bodies of one answer: the whole JSON, or its SSE chunks."""

    def __init__(self, ask: Ask) -> None:
        self.ask = ask
        self.id = ("chatcmpl-" if ask.chat else "cmpl-") + uuid.uuid4().hex
        self.created = int(time.time())

    def _head(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.ask.model}

    def usage(self, completion_tokens: int) -> dict[str, int]:
        prompt = self.ask.prompt_tokens
        return {
            "prompt_tokens": prompt,
            "total_tokens": prompt + completion_tokens,
            "completion_tokens": completion_tokens,
        }

    def whole(self, text: str, completion_tokens: int) -> bytes:
        """The answer of a request that is not streamed."""
        if self.ask.chat:
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": None,
                "finish_reason": "length",
            }
            body = self._head("chat.completion")
        else:
            choice = {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": "length",
                "stop_reason": None,
            }
            body = self._head("text_completion")
        body["choices"] = [choice]
        body["usage"] = self.usage(completion_tokens)
        return orjson.dumps(body)

    def opening(self) -> bytes:
        """What a chat stream sends before its first token (nothing for completions)."""
        if not self.ask.chat:
            return b""
        delta = {"role": "assistant", "content": ""}
        return self._event("chat.completion.chunk", {"delta": delta}, None)

    def chunk(self, text: str, last: bool) -> bytes:
        """One streamed piece of the answer."""
        finish = "length" if last else None
        if self.ask.chat:
            return self._event("chat.completion.chunk", {"delta": {"content": text}}, finish)
        return self._event("text_completion", {"text": text, "stop_reason": None}, finish)

    def closing(self, completion_tokens: int) -> bytes:
        """The usage chunk (when asked for) and the end of the stream."""
        out = b""
        if self.ask.include_usage:
            body = self._head("chat.completion.chunk" if self.ask.chat else "text_completion")
            body["choices"] = []
            body["usage"] = self.usage(completion_tokens)
            out = b"data: " + orjson.dumps(body) + b"\n\n"
        return out + b"data: [DONE]\n\n"

    def _event(self, kind: str, fields: dict[str, Any], finish: str | None) -> bytes:
        body = self._head(kind)
        body["choices"] = [{"index": 0, **fields, "logprobs": None, "finish_reason": finish}]
        return b"data: " + orjson.dumps(body) + b"\n\n"
