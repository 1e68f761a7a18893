"""A streaming OpenAI client for the emulator's tests and benchmark: one request, timed.

Written on aiohttp's client, reading the server-sent events line by line as they arrive, so
each token's arrival time is the client's clock when its chunk's line was complete. That clock
is the running loop's: real (monotonic) time on asyncio's own loop, the model's time on the
tests' virtual clock (tests/optimizer/emulator/virtual_clock.py).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp


@dataclass
class Timed:
    """What a client saw of one streamed answer (seconds on its loop's clock)."""

    sent: float
    status: int = 0
    first: float | None = None  # first chunk with a token
    token_times: list[float] = field(default_factory=list)  # one per token received
    done: float | None = None
    text: str = ""
    usage: dict[str, Any] | None = None
    chunks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ttft(self) -> float:
        assert self.first is not None
        return self.first - self.sent


def _piece(chunk: dict[str, Any]) -> str:
    choice = chunk["choices"][0]
    if "delta" in choice:
        return str(choice["delta"].get("content") or "")
    return str(choice.get("text") or "")


async def stream(
    session: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> Timed:
    """POST `body` with `"stream": true` to `url` and time every token (4 characters each)."""
    clock = asyncio.get_running_loop().time
    timed = Timed(sent=clock())
    async with session.post(url, json={**body, "stream": True}, headers=headers) as response:
        timed.status = response.status
        if response.status != 200:
            timed.text = await response.text()
            return timed
        async for raw in response.content:
            line = raw.strip()
            if not line.startswith(b"data: "):
                continue
            now = clock()
            payload = line[6:]
            if payload == b"[DONE]":
                timed.done = now
                break
            chunk = json.loads(payload)
            timed.chunks.append(chunk)
            if chunk.get("usage"):
                timed.usage = chunk["usage"]
            if not chunk["choices"]:
                continue
            piece = _piece(chunk)
            if piece:
                if timed.first is None:
                    timed.first = now
                timed.text += piece
                timed.token_times.extend([now] * (len(piece) // 4))
    return timed
