"""One request on an emulated node: what the model says of it, and its delivery in time.

The node model (`optimizer.emulator.engine`) pushes how many tokens have left the node and
when; the HTTP handler reads `tokens`, which hands each count on at the time the client would
see it, RTT/2 later on the loop's clock.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator


class Sequence:
    """One request on an emulated node, as its HTTP handler follows it."""

    __slots__ = (
        "rid",
        "node",
        "model",
        "source",
        "site",
        "hashes",
        "arrival",
        "prompt_tokens",
        "output",
        "stream",
        "half_rtt",
        "at_node",
        "cached_tokens",
        "produced",
        "ended",
        "ttft_s",
        "e2e_s",
        "prefill_phase",
        "decode_node",
        "prefilled_on",
        "origin",
        "_updates",
        "_waiter",
    )

    def __init__(
        self, rid: int, node: int, model: int, prompt: int, output: int, stream: bool, half: float
    ) -> None:
        self.rid, self.node, self.model = rid, node, model
        self.source: str | None = None  # the source's name (None: a bare site)
        self.site = ""  # the site it came from
        self.hashes: tuple[int, ...] = ()
        self.arrival = 0.0  # model time the server received it
        self.prompt_tokens, self.output, self.stream, self.half_rtt = prompt, output, stream, half
        self.at_node: float | None = None  # model time it reached the node
        self.cached_tokens = 0
        self.produced = 0  # tokens out of the node so far
        self.ended = False  # finished or cancelled
        self.ttft_s = 0.0  # the model's TTFT and end-to-end latency, network included
        self.e2e_s = 0.0
        # A split request (issue #30) is two sequences: its prefill phase (`prefill_phase`;
        # `decode_node` the node it hands off to, -1 when this node cannot know: the router's
        # way) and its decode phase (`prefilled_on` the node that prefilled it, `origin` the
        # model time the whole request arrived there; None when unknown). The request log
        # writes one line per request, for the decode phase (server.FleetServer).
        self.prefill_phase = False
        self.decode_node = -1
        self.prefilled_on = -1
        self.origin: float | None = None
        self._updates: deque[tuple[int, float]] = deque()  # (tokens out, model time)
        self._waiter: asyncio.Future[None] | None = None

    def push(self, produced: int, at: float) -> None:
        """The node has put out `produced` tokens of this request by model time `at`."""
        self.produced = produced
        self._updates.append((produced, at))
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def tokens(self, origin: float) -> AsyncIterator[int]:
        """The count of tokens the client has, each time it grows, at the time the client
        would see it (RTT/2 after the token left the node; model time 0 is `origin` on the
        running loop's clock); tokens due together come as one."""
        sent = 0
        loop = asyncio.get_running_loop()
        while sent < self.output:
            while not self._updates:
                self._waiter = loop.create_future()
                await self._waiter
            produced, at = self._updates.popleft()
            delay = origin + at + self.half_rtt - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            due = loop.time() - origin - self.half_rtt
            while self._updates and self._updates[0][1] <= due:
                produced = self._updates.popleft()[0]
            if produced > sent:
                sent = produced
                yield sent
