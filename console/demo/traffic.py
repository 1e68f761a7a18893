"""The living demo's clients: a trace's arrivals sent as OpenAI calls through the router.

Open loop, as real users are: each request leaves at its arrival time whatever happened to the
ones before it (a task per request; the connection pool has no limit, so none queues behind
another). Each call carries what a real client would:
- the demo's service key as its OpenAI API key (`Authorization: Bearer`), so the router
  authenticates it and its decision records name the key (`decided_by`);
- its source in `x-locus-source` (docs/router.md, "Sources"), drawn by the sources' shares as
  every replay draws them (`optimizer.traces.draw_requests`), and a session in
  `x-session-token`;
- a prompt of filler text that shares blocks as the trace's `hash_ids` do
  (`optimizer.emulator.text.trace_prompt`), so prefix sharing reaches the router and the
  nodes' caches as text, and the trace's output length as `max_tokens`.
Calls alternate between `/v1/completions` and `/v1/chat/completions`, streamed and not.

The router records every outcome itself (`doors/router/outcome.py`); the client only counts
what it got back, for the log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from optimizer.decide.request import PlacementRequest
from optimizer.emulator.text import trace_prompt
from optimizer.traces import TraceRequest

logger = logging.getLogger(__name__)
# A call still open after this is abandoned (the router then cancels it at the node).
CALL_TIMEOUT_S = 600.0
# Distinct sessions, as the old demo's clients had.
SESSIONS = 997


def repeat_trace(trace: list[TraceRequest], seconds: float) -> list[TraceRequest]:
    """The trace played back to back until `seconds` of arrivals; each repetition's blocks get
    fresh ids, so a replay is new traffic rather than a perfect cache hit."""
    span = trace[-1].arrival_s + 1.0
    out: list[TraceRequest] = []
    offset, round_no = 0.0, 0
    top = max((max(r.hash_ids, default=0) for r in trace), default=0) + 1
    while offset < seconds:
        for r in trace:
            out.append(
                TraceRequest(
                    arrival_s=r.arrival_s + offset,
                    prompt_tokens=r.prompt_tokens,
                    output_tokens=r.output_tokens,
                    hash_ids=tuple(h + round_no * top for h in r.hash_ids),
                )
            )
        offset += span
        round_no += 1
    return out


@dataclass
class TrafficStats:
    """What the clients got back: calls sent, answered (2xx, read to the end), and the rest
    by status (`"error"`: no HTTP answer at all)."""

    sent: int = 0
    answered: int = 0
    refused: Counter[str] = field(default_factory=Counter)

    def __str__(self) -> str:
        others = ", ".join(f"{k}: {v}" for k, v in sorted(self.refused.items())) or "none"
        return f"{self.sent} sent, {self.answered} answered, other answers: {others}"


def call_of(index: int, request: PlacementRequest) -> tuple[str, dict[str, Any]]:
    """The path and body of the `index`-th call: completions and chat in turn, each streamed
    every other time."""
    prompt = trace_prompt(request.prefix_hashes, request.prompt_tokens)
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": max(1, request.max_output_tokens),
        "stream": index % 2 == 1,
    }
    if index % 4 < 2:
        return "/v1/completions", body | {"prompt": prompt}
    return "/v1/chat/completions", body | {"messages": [{"role": "user", "content": prompt}]}


class DemoTraffic:
    """Sends `requests` at their `arrivals` (seconds from `run`'s start) to `router_url`."""

    def __init__(
        self,
        *,
        requests: list[PlacementRequest],
        arrivals: list[float],
        router_url: str,
        key: str,
    ) -> None:
        if len(requests) != len(arrivals):
            raise ValueError("one arrival time per request")
        self.requests = requests
        self.arrivals = arrivals
        self.router_url = router_url.rstrip("/")
        self.key = key
        self.stats = TrafficStats()
        self._open: set[asyncio.Task[None]] = set()

    async def run(self) -> TrafficStats:
        """Until every call is sent and answered; cancelled, it abandons the open calls."""
        connector = aiohttp.TCPConnector(limit=0)
        timeout = aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)
        headers = {"Authorization": f"Bearer {self.key}"}
        async with aiohttp.ClientSession(
            connector=connector, timeout=timeout, headers=headers
        ) as session:
            try:
                started = time.monotonic()
                for index, (request, due) in enumerate(
                    zip(self.requests, self.arrivals, strict=True)
                ):
                    await asyncio.sleep(max(0.0, started + due - time.monotonic()))
                    task = asyncio.create_task(self._send(session, index, request))
                    self._open.add(task)
                    task.add_done_callback(self._open.discard)
                if self._open:
                    await asyncio.wait(set(self._open))
            finally:
                for task in self._open:
                    task.cancel()
                if self._open:
                    await asyncio.wait(set(self._open))
        return self.stats

    async def _send(
        self, session: aiohttp.ClientSession, index: int, request: PlacementRequest
    ) -> None:
        path, body = call_of(index, request)
        headers = {"x-session-token": f"demo-{index % SESSIONS}"}
        if request.source:
            headers["x-locus-source"] = request.source
        self.stats.sent += 1
        try:
            async with session.post(self.router_url + path, json=body, headers=headers) as answer:
                if 200 <= answer.status < 300:
                    async for _ in answer.content.iter_any():
                        pass  # to the end, as a client reads: the router times the whole answer
                    self.stats.answered += 1
                    return
                status = str(answer.status)
                self.stats.refused[status] += 1
                text = (await answer.read()).decode(errors="replace")
                if self.stats.refused[status] == 1:  # the first of each kind says why
                    logger.warning("demo call to %s answered %s: %s", path, status, text[:300])
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.stats.refused["error"] += 1
            logger.debug("demo call %d failed: %s", index, exc)
