"""The living demo's fleet: emulated inference nodes, and clients sending them traffic through
the router.

One event loop holds both halves:
- every node of the inventory as its own OpenAI/vLLM endpoint at the node's address
  (`optimizer.emulator.FleetServer`, docs/emulator.md), running at the speeds of the truth
  topology; the console scrapes each node's `/metrics` like a real vLLM's;
- the clients (`traffic.py`), replaying a trace through the router (`manage.py run_router`),
  which decides, forwards to the node, and records every outcome itself.

That closes the loop with real protocols only: calls → router → decisions → load on the
nodes → `/metrics` → telemetry → snapshot → decisions.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from console.demo.traffic import DemoTraffic, TrafficStats
from optimizer.emulator import FleetServer

# How often the fleet looks at what its clients got back. It reports only trouble: a line a
# minute in a healthy run would push the sign-in line, which `make run` prints last (issue
# 28), off the top of the terminal.
REPORT_EVERY_S = 60.0


class RouterNotReady(RuntimeError):
    pass


async def wait_for_router(url: str, seconds: float) -> None:
    """Until the router's `/health` answers 200 (it holds an inventory snapshot)."""
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while time.monotonic() < deadline:
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(f"{url.rstrip('/')}/health") as answer:
                    if answer.status == 200:
                        return
            await asyncio.sleep(1.0)
    raise RouterNotReady(f"the router at {url} was not ready in {seconds:.0f}s")


async def run_fleet(
    server: FleetServer,
    traffic: DemoTraffic,
    *,
    router_wait_s: float = 120.0,
    report: Callable[[TrafficStats], None] = lambda stats: None,
) -> TrafficStats:
    """Serve the nodes and send the traffic until it is all answered, or SIGTERM/SIGINT
    (the supervisor's stop, `docker stop`, Ctrl-C) ends the run: the open calls are then
    abandoned and the listeners closed, within a second."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await server.start()
    try:
        sending = asyncio.create_task(_send_after_router(traffic, router_wait_s))
        stopping = asyncio.create_task(stop.wait())
        seen = _Seen.of(traffic.stats)
        while not sending.done() and not stop.is_set():
            await asyncio.wait(
                {sending, stopping}, timeout=REPORT_EVERY_S, return_when=asyncio.FIRST_COMPLETED
            )
            now = _Seen.of(traffic.stats)
            if not sending.done() and not stop.is_set() and now.troubled_since(seen):
                report(traffic.stats)
            seen = now
        stopping.cancel()
        if not sending.done():
            sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        return traffic.stats
    finally:
        await server.stop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


@dataclass(frozen=True)
class _Seen:
    """The clients' counts at one report time."""

    sent: int
    answered: int
    refused: int

    @classmethod
    def of(cls, stats: TrafficStats) -> _Seen:
        return cls(stats.sent, stats.answered, sum(stats.refused.values()))

    def troubled_since(self, before: _Seen) -> bool:
        """Calls answered other than 2xx (or not at all), or calls sent and none answered,
        since `before`."""
        stalled = self.sent > before.sent and self.answered == before.answered
        return self.refused > before.refused or stalled


async def _send_after_router(traffic: DemoTraffic, router_wait_s: float) -> None:
    await wait_for_router(traffic.router_url, router_wait_s)
    await traffic.run()
