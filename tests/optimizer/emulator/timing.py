"""Serving an emulated fleet and driving it from one event loop, for the timing tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp

from optimizer.emulator import FleetServer
from optimizer.emulator.sequence import Sequence
from optimizer.topology import Topology
from tests.optimizer.emulator.client import Timed, stream

T = TypeVar("T")
# How much later than the model a client on this machine may see a token, in seconds:
# tests/bench/bench_emulator.py measured the client-minus-model TTFT across processes on the
# shared 2-core machine (load average 7-12) at a median of 4-9 ms and a p99 of 13-55 ms, the
# machine's own asyncio.sleep waking 1 ms late at the median and 5-9 ms at the p99 in the
# same minutes. Every timing the tests check differs from what a broken model would give by
# 100 ms or more.
LATE_S = 0.060
EARLY_S = 0.001  # clocks: the client's perf_counter and the loop's monotonic clock


@dataclass
class Served:
    """A running fleet, a client session, and the model's record of each finished request."""

    server: FleetServer
    session: aiohttp.ClientSession
    ended: list[Sequence] = field(default_factory=list)

    def url(self, node: str) -> str:
        return self.server.urls[node] + "/v1/completions"

    async def stream(self, node: str, body: dict[str, Any], source: str = "app") -> Timed:
        return await stream(self.session, self.url(node), body, {"x-locus-source": source})

    def model(self, prompt_tokens: int) -> Sequence:
        """The model's finished sequence with this prompt length."""
        [seq] = [s for s in self.ended if s.prompt_tokens == prompt_tokens]
        return seq


def run(topology: Topology, scenario: Callable[[Served], Awaitable[T]]) -> T:
    """Serve `topology` and run `scenario` against it, server and client on one loop."""

    async def main() -> T:
        server = FleetServer(topology, port_base=0)
        await server.start()
        try:
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as session:
                served = Served(server, session)
                assert server.fleet is not None
                server.fleet.on_end = lambda seq, ok: served.ended.append(seq)
                return await scenario(served)
        finally:
            await server.stop()

    return asyncio.run(main())


def assert_on_time(measured: float, model: float) -> None:
    """A client's measure of a model time: never early, and late by at most LATE_S."""
    assert model - EARLY_S <= measured <= model + LATE_S, (measured, model)


def assert_span(measured: float, model: float) -> None:
    """A client's measure of the time between two model instants: each end may be late."""
    assert abs(measured - model) <= LATE_S, (measured, model)
