"""`run_picker --processes N`: N full pickers on one port (docs/gateway.md, "Processes").

One Python process decides on one core at a time (the GIL), and grpcio's stream costs several
hundred microseconds of CPU per request before the picker does anything (docs/gateway.md,
"Performance"). So, as `uvicorn --workers` does for the REST API, the command runs N
independent pickers: the first in the command's own process, N-1 spawned, each with its own
engine, breakers, recorder and gRPC servers, all listening on the same ext_proc and health
ports with SO_REUSEPORT (grpcio's `grpc.so_reuseport` option; the kernel spreads new
connections over the listeners, socket(7)). Spread is per connection, not per stream: Envoy's
ext_proc client keeps its HTTP/2 connections open, so a process serves the streams of the
connections it accepted.

The spawned pickers are supervised: one that dies is started again; SIGTERM on the command
stops them all, each writing what its recorder still holds.
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
# A picker that dies at once (a bad setting, the database gone at start) is restarted at most
# this often, not in a tight loop.
RESTART_INTERVAL_S = 1.0


@dataclass
class PickerProcesses:
    """`count` spawned pickers serving on ports the command's own picker already bound."""

    count: int
    port: int
    health_port: int
    source: str | None
    host: str
    _children: list[BaseProcess] = field(default_factory=list)
    _started_at: list[float] = field(default_factory=list)
    # Each child's "listening" event, kept: a child unpickles it after its start, and an
    # event the parent dropped is gone by then (its semaphore unlinked).
    _ready: list[Any] = field(default_factory=list)
    _stopping: bool = False

    def start(self, timeout: float = 60.0) -> PickerProcesses:
        """Spawn them; return once each listens (or `timeout` passed; check() restarts one
        that died)."""
        listening = [self._spawn() for _ in range(self.count)]
        deadline = time.monotonic() + timeout
        for child, ready in listening:
            self._children.append(child)
            self._ready.append(ready)
            self._started_at.append(time.monotonic())
            while child.is_alive() and not ready.wait(0.2) and time.monotonic() < deadline:
                pass
        return self

    def check(self) -> None:
        """Start again any picker that ended while the command still runs."""
        for index, child in enumerate(self._children):
            if self._stopping or child.is_alive():
                continue
            if time.monotonic() - self._started_at[index] < RESTART_INTERVAL_S:
                continue
            logger.warning(
                "picker process %s ended (exit %s); starting another", child.pid, child.exitcode
            )
            self._children[index], self._ready[index] = self._spawn()
            self._started_at[index] = time.monotonic()

    def stop(self, timeout: float = 15.0) -> None:
        self._stopping = True
        for child in self._children:
            if child.is_alive():
                child.terminate()  # SIGTERM: the child stops its servers and flushes its recorder
        deadline = time.monotonic() + timeout
        for child in self._children:
            child.join(max(0.0, deadline - time.monotonic()))
            if child.is_alive():
                child.kill()
                child.join(1.0)

    def _spawn(self) -> tuple[BaseProcess, Any]:
        # spawn, not fork: a fork would copy the command's gRPC, engine and database threads'
        # state mid-flight (grpcio does not support fork after its threads started).
        context = multiprocessing.get_context("spawn")
        ready = context.Event()
        process = context.Process(
            target=serve_one,
            args=(self.port, self.health_port, self.source, self.host, ready),
            name="locus-picker-process",
            daemon=True,
        )
        process.start()
        return process, ready


def serve_one(port: int, health_port: int, source: str | None, host: str, ready: Any) -> None:
    """A spawned picker: the same server as the command's own, on the same ports."""
    import django

    django.setup()
    # Imported only now: a spawned process starts bare, and these load models, which need
    # Django set up first.
    from console.placement.doors.extproc.server import PickerServer
    from console.placement.engine.runtime import runtime

    server = PickerServer(port=port, health_port=health_port, source=source, host=host).start()
    ready.set()

    def stop(signum: int, frame: FrameType | None) -> None:
        server.stop()

    signal.signal(signal.SIGTERM, stop)
    # Ctrl-C reaches the whole process group; the command stops its pickers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server.wait()
    runtime().recorder.stop(timeout=10.0)
