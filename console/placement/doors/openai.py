"""OpenAI request bodies as the picker reads them: model, prompt size and block ids, and the
output budget (docs/gateway.md, "What the picker reads").

Only the fields placement needs are validated; everything else passes to the model server
untouched (the body is forwarded byte for byte unless the model name is rewritten).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from optimizer.prompts import chat_text, prompt_blocks, prompt_token_blocks

COMPLETIONS = "/v1/completions"
CHAT_COMPLETIONS = "/v1/chat/completions"
PATHS = (COMPLETIONS, CHAT_COMPLETIONS)
# OpenAI's documented default for /v1/completions is 16 tokens; chat completions have none
# (the context window is the limit), so Locus assumes a typical answer of 256 for placement.
DEFAULT_MAX_TOKENS = {COMPLETIONS: 16, CHAT_COMPLETIONS: 256}
MAX_TOKENS = 10_000_000  # the REST API's bound on max_output_tokens
TokenId = Annotated[int, Field(ge=0, lt=2**32)]
Budget = Annotated[int, Field(ge=1, le=MAX_TOKENS)]


class BadBody(ValueError):
    """The body cannot be placed: a 400 naming the fields."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, protected_namespaces=())

    model: str = Field(min_length=1, max_length=200)
    max_tokens: Budget | None = None


class CompletionsBody(_Body):
    """POST /v1/completions: a prompt as text, texts, token ids or lists of token ids."""

    # The body's size bounds these lists (LOCUS_PICKER_MAX_BODY_BYTES).
    prompt: str | list[str] | list[TokenId] | list[list[TokenId]] = Field(
        union_mode="left_to_right"
    )


class Message(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    role: str = Field(max_length=100)
    content: str | list[dict[str, Any]] | None = None


class ChatBody(_Body):
    """POST /v1/chat/completions: messages, and `max_completion_tokens` (which replaced
    `max_tokens` in OpenAI's API; either is read)."""

    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: Budget | None = None


@dataclass(frozen=True)
class OpenAIRequest:
    """What placement needs from a body, and the body to forward."""

    model: str
    prompt_tokens: int
    max_output_tokens: int
    prefix_hashes: tuple[int, ...]
    body: bytes
    rewritten: bool


def parse_openai(path: str, raw: bytes, *, model_rewrite: str | None) -> OpenAIRequest:
    """Read `raw` as the body of `path` (one of PATHS); BadBody names what is wrong.
    `model_rewrite` (x-gateway-model-name-rewrite) replaces the body's model, the one placed
    and the one the model server sees."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise BadBody({"body": [f"Not JSON: {exc}"]}) from None
    if not isinstance(data, dict):
        raise BadBody({"body": ["Must be a JSON object."]})
    try:
        if path == COMPLETIONS:
            body: _Body = CompletionsBody.model_validate(data)
        else:
            body = ChatBody.model_validate(data)
    except ValidationError as exc:
        raise BadBody(_field_errors(exc)) from None
    if isinstance(body, CompletionsBody):
        tokens, hashes = _completion_blocks(body.prompt)
        budget = body.max_tokens
    else:
        assert isinstance(body, ChatBody)
        # The validated messages, read as sent (no copies through the model).
        tokens, hashes = prompt_blocks(chat_text(data["messages"]))
        budget = body.max_completion_tokens or body.max_tokens
    model = body.model
    rewritten = model_rewrite is not None and model_rewrite != model
    if rewritten:
        assert model_rewrite is not None
        model = model_rewrite
        data["model"] = model
        raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    return OpenAIRequest(
        model=model,
        prompt_tokens=min(tokens, MAX_TOKENS),
        max_output_tokens=budget or DEFAULT_MAX_TOKENS[path],
        prefix_hashes=hashes[:4096],  # the REST API's bound (placement/doors/bodies.py)
        body=raw,
        rewritten=rewritten,
    )


def _completion_blocks(prompt: Any) -> tuple[int, tuple[int, ...]]:
    if isinstance(prompt, str):
        return prompt_blocks(prompt)
    if prompt and isinstance(prompt[0], str):
        return prompt_blocks("".join(prompt))
    if prompt and isinstance(prompt[0], list):
        # A batch of token-id prompts is one request to one server: place their total.
        counts = [prompt_token_blocks(ids) for ids in prompt]
        return sum(c for c, _ in counts), counts[0][1]
    return prompt_token_blocks(prompt)


def _field_errors(exc: ValidationError) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for error in exc.errors():
        field = ".".join(str(p) for p in error["loc"][:2]) or "body"
        errors.setdefault(f"body.{field}", []).append(str(error["msg"]))
    return errors
