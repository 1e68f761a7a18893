"""The answer relayed as it arrives, with what the outcome needs noted on the way: when the
first token came, and the token counts of `usage`.

A streamed answer is server-sent events (`data: {...}` separated by a blank line; the
HTML standard's "Server-sent events"). Events are relayed whole and unchanged, each as soon as
its end arrives; only the node's usage chunk is dropped when the router asked for it and the
client did not (`calls.py`). Events are parsed only while no token has come yet, and when one
mentions `usage`: after the first token the relay is a byte scan.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

# An event ends at a blank line; servers may end lines with CRLF.
_EVENT_END = re.compile(rb"\r?\n\r?\n")
_USAGE = re.compile(rb'"usage"\s*:\s*\{')
# OpenAI's stream terminator, the answer's last event: a client may hang up once it has it.
_DONE = re.compile(rb"^data:\s*\[DONE\]", re.MULTILINE)


def _has_token(choice: Any) -> bool:
    """Whether a streamed choice carries output: text, content, reasoning or a tool call (a
    chat stream's first chunk, `{"role": "assistant", "content": ""}`, carries none)."""
    if not isinstance(choice, dict):
        return False
    if choice.get("text"):
        return True
    delta = choice.get("delta")
    return isinstance(delta, dict) and any(
        delta.get(k) for k in ("content", "reasoning_content", "reasoning", "tool_calls")
    )


def _data(event: bytes) -> Any:
    """The JSON of an event's `data:` line, or None."""
    for line in event.splitlines():
        if line.startswith(b"data:"):
            payload = line[5:].strip()
            if payload and payload != b"[DONE]":
                try:
                    return orjson.loads(payload)
                except orjson.JSONDecodeError:
                    return None
    return None


class SseRelay:
    """Feed it the node's bytes; it returns what the client gets, and notes `first_token`
    (set by the caller's clock through `feed`'s `now`), `usage`, and `done` once the stream's
    terminator (`data: [DONE]`) has been returned."""

    def __init__(self, *, strip_usage: bool) -> None:
        self.strip_usage = strip_usage
        self.first_token: float | None = None
        self.usage: dict[str, Any] | None = None
        self.done = False
        self._tail = b""

    def feed(self, chunk: bytes, now: float) -> bytes:
        data = self._tail + chunk
        out: list[bytes] = []
        start = 0
        for end in _EVENT_END.finditer(data):
            event = data[start : end.end()]
            start = end.end()
            if self._keep(event, now):
                out.append(event)
                self.done = self.done or _DONE.search(event) is not None
        self._tail = data[start:]
        return b"".join(out)

    def close(self) -> bytes:
        """What is left when the node's answer ends (an unterminated last event)."""
        tail, self._tail = self._tail, b""
        return tail

    def _keep(self, event: bytes, now: float) -> bool:
        mentions_usage = _USAGE.search(event) is not None
        if self.first_token is not None and not mentions_usage:
            return True
        parsed = _data(event)
        if not isinstance(parsed, dict):
            return True
        choices = parsed.get("choices")
        if self.first_token is None and isinstance(choices, list) and any(map(_has_token, choices)):
            self.first_token = now
        if mentions_usage and isinstance(parsed.get("usage"), dict):
            self.usage = parsed["usage"]
            # The usage chunk the router asked for has no choices (OpenAI's stream_options
            # docs); a usage the node sends in a chunk with choices stays (vLLM's
            # continuous_usage_stats), as a direct call would show it.
            if self.strip_usage and not choices:
                return False
        return True


def usage_of(body: bytes) -> dict[str, Any] | None:
    """`usage` of an answer that was not streamed."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    usage = parsed.get("usage") if isinstance(parsed, dict) else None
    return usage if isinstance(usage, dict) else None
