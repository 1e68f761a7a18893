"""`run_router --processes N`: N full routers on one port.

One Python process routes on one core at a time (the GIL). As `run_picker --processes` does
(doors/extproc/processes.py), the command runs N independent routers, the first in its own
process and N-1 spawned, each with its own engine, breakers, recorder and connection pools,
all listening on one port with SO_REUSEPORT (the kernel spreads new connections over the
listeners, socket(7)). Spread is per connection: a client's keep-alive connection stays with
one process. A spawned router that dies is started again; stopping the command stops them all,
each writing what its recorder still holds.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import time
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

logger = logging.getLogger(__name__)
RESTART_INTERVAL_S = 1.0  # a router that dies at once is not restarted in a tight loop


@dataclass
class RouterProcesses:
    """`count` spawned routers serving on the port the command's own router bound."""

    count: int
    port: int
    source: str | None
    host: str
    _children: list[BaseProcess] = field(default_factory=list)
    _started_at: list[float] = field(default_factory=list)
    _ready: list[Any] = field(default_factory=list)  # kept: see the picker's processes.py
    _stopping: bool = False

    def start(self, timeout: float = 60.0) -> RouterProcesses:
        deadline = time.monotonic() + timeout
        for _ in range(self.count):
            child, ready = self._spawn()
            self._children.append(child)
            self._ready.append(ready)
            self._started_at.append(time.monotonic())
        for child, ready in zip(self._children, self._ready, strict=True):
            while child.is_alive() and not ready.wait(0.2) and time.monotonic() < deadline:
                pass
        return self

    def check(self) -> None:
        """Start again any router that ended while the command still runs."""
        for index, child in enumerate(self._children):
            if self._stopping or child.is_alive():
                continue
            if time.monotonic() - self._started_at[index] < RESTART_INTERVAL_S:
                continue
            logger.warning(
                "router process %s ended (exit %s); starting another", child.pid, child.exitcode
            )
            self._children[index], self._ready[index] = self._spawn()
            self._started_at[index] = time.monotonic()

    def stop(self, timeout: float = 15.0) -> None:
        self._stopping = True
        for child in self._children:
            if child.is_alive():
                child.terminate()
        deadline = time.monotonic() + timeout
        for child in self._children:
            child.join(max(0.0, deadline - time.monotonic()))
            if child.is_alive():
                child.kill()
                child.join(1.0)

    def _spawn(self) -> tuple[BaseProcess, Any]:
        # spawn, not fork: a fork would copy the engine's and the loop's threads mid-flight.
        context = multiprocessing.get_context("spawn")
        ready = context.Event()
        process = context.Process(
            target=serve_one,
            args=(self.port, self.source, self.host, ready),
            name="locus-router-process",
            daemon=True,
        )
        process.start()
        return process, ready


def serve_one(port: int, source: str | None, host: str, ready: Any) -> None:
    """A spawned router: the same server as the command's own, on the same port."""
    import django

    django.setup()
    # Imported only now: a spawned process starts bare, and these need Django set up.
    from console.placement.doors.router.app import RouterServer
    from console.placement.engine.runtime import runtime

    server = RouterServer(port=port, source=source, host=host).start()
    ready.set()

    def stop(signum: int, frame: FrameType | None) -> None:
        server.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command stops its routers itself
    server.wait()
    runtime().recorder.stop(timeout=10.0)
