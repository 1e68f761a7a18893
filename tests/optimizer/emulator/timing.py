"""Serving an emulated fleet and driving it from one event loop, for the timing tests.

The loop runs on the virtual clock (tests/optimizer/emulator/virtual_clock.py) unless told
otherwise: the model's time is the loop's (`optimizer.emulator.engine`), and the client's
clock is the same loop's (tests/optimizer/emulator/client.py), so a client sees each token at
the model instant it was sent, exactly, however busy the machine. On the real clock a client
on this machine saw tokens a few ms late at the median (tests/bench/bench_emulator.py), and
once 0.5 s late beside the other pytest-xdist worker's browser tests: a timing test on the
real clock checks the machine's load as much as the model.

The virtual loop moves its clock only when a poll finds no socket ready. Server and client
are this loop's, so every byte in flight was sent by it, and on loopback a sent byte is
normally readable by the time `send` returns (Linux's loopback driver queues it with
`netif_rx`, and the receive runs as the sender's call re-enables softirqs,
drivers/net/loopback.c), so the clock does not jump past one. Measured: the emulator's tests
ran 5 times on two xdist workers beside two CPU hogs at nice 0, every client time equal to
the model's; a jump past a byte would fail them by a whole model step, not pass them late.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import pytest

from optimizer.emulator import FleetServer
from optimizer.emulator.sequence import Sequence
from optimizer.topology import Topology
from tests.optimizer.emulator.client import Timed, stream
from tests.optimizer.emulator.virtual_clock import VirtualClockLoop

T = TypeVar("T")
# What float sums of model times may differ by (the client's difference of two loop times
# against the model's sum of its delays).
EXACT_S = 1e-9


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


def run(
    topology: Topology, scenario: Callable[[Served], Awaitable[T]], *, real_time: bool = False
) -> T:
    """Serve `topology` and run `scenario` against it, server and client on one loop: on the
    virtual clock, or on the real one with `real_time` (the benchmark's)."""

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

    with asyncio.Runner(loop_factory=None if real_time else VirtualClockLoop) as runner:
        return runner.run(main())


def assert_on_time(measured: float, model: float) -> None:
    """A client's measure of a model time is the model's time."""
    assert measured == pytest.approx(model, abs=EXACT_S), (measured, model)
