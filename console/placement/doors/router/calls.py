"""An OpenAI call as the router reads it: what the engine is asked (the picker's own reading
of the body, `doors/openai.py`), the source, and the body to forward.

The body is forwarded byte for byte, except in two cases, where it is written again:
- a streamed call that did not ask for `stream_options.include_usage` gets it, so the node's
  last chunk carries the token counts the outcome records; the router strips that chunk from
  what the client receives (`streaming.py`), so the client sees what a direct call would show;
- a `locus_source` field (the source, for clients that cannot add headers) is removed, so the
  node never sees a field of Locus's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from console.placement.doors.openai import BadBody, parse_openai
from console.placement.doors.router.errors import RouterError
from console.placement.engine.inputs import DecisionInput

SOURCE_HEADER = "x-locus-source"
SESSION_HEADER = "x-session-token"
# The body field naming the source, for clients behind a proxy that drops custom headers
# (sglang-router forwards only a fixed list of headers; docs/router.md, "Sources").
SOURCE_FIELD = "locus_source"
USAGE_ASKED = b'{"stream_options":{"include_usage":true},'


@dataclass(frozen=True)
class Call:
    """One call: the engine's input, the body for the node, and how to relay the answer."""

    decision: DecisionInput
    body: bytes
    stream: bool
    # The router asked the node for a usage chunk the client did not ask for: strip it.
    strip_usage: bool


def read_call(
    path: str,
    raw: bytes,
    *,
    headers: Any,
    default_source: str | None,
    caller: str,
    among: frozenset[str],
) -> Call:
    """The call in `raw` (the body of `path`, one of the OpenAI paths), or a RouterError."""
    try:
        asked = parse_openai(path, raw, model_rewrite=None)
        data = orjson.loads(raw)  # parse_openai checked it is a JSON object
    except orjson.JSONDecodeError as exc:  # what json reads and orjson does not (a BOM)
        raise RouterError(400, f"We could not parse the JSON body of your request: {exc}") from None
    except BadBody as exc:
        raise RouterError(
            400, f"We could not parse the JSON body of your request: {exc}", errors=exc.errors
        ) from None
    named = data.pop(SOURCE_FIELD, None)
    if named is not None and not (isinstance(named, str) and 0 < len(named) <= 100):
        raise RouterError(
            400, f"{SOURCE_FIELD}: a source name (1-100 characters).", param=SOURCE_FIELD
        )
    source = headers.get(SOURCE_HEADER) or named or default_source
    if not source:
        raise RouterError(
            400,
            f"No request source: send an {SOURCE_HEADER} header or a {SOURCE_FIELD} field, "
            "or start the router with --source.",
            param=SOURCE_FIELD,
        )
    session = headers.get(SESSION_HEADER) or None
    if session is not None and len(session) > 200:
        raise RouterError(400, f"{SESSION_HEADER}: at most 200 characters.")
    stream = data.get("stream") is True
    options = data.get("stream_options")
    wants_usage = isinstance(options, dict) and options.get("include_usage") is True
    strip_usage = stream and not wants_usage
    body = asked.body
    if strip_usage and options is None and named is None and raw.lstrip().startswith(b"{"):
        # Spliced, not re-serialised: every byte the client wrote reaches the node as written.
        body = USAGE_ASKED + raw.lstrip()[1:]
    elif strip_usage or named is not None:
        if strip_usage:
            data["stream_options"] = {
                **(options if isinstance(options, dict) else {}),
                "include_usage": True,
            }
        body = orjson.dumps(data)
    return Call(
        decision=DecisionInput(
            model=asked.model,
            prompt_tokens=asked.prompt_tokens,
            max_output_tokens=asked.max_output_tokens,
            source=source,
            prefix_hashes=asked.prefix_hashes,
            session_id=session,
            caller=caller,
            among=among,
        ),
        body=body,
        stream=stream,
        strip_usage=strip_usage,
    )
