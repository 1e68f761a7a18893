"""N-1 spawned copies of a door's server beside the command's own (`run_picker --processes N`,
`run_router --processes N`): started, restarted when one dies, stopped together.

One Python process serves on one core at a time (the GIL), so a door scales on one machine by
running independent servers, each with its own engine, breakers and recorder, all listening on
the same port(s) with SO_REUSEPORT (the kernel spreads new connections over the listeners,
socket(7)). Each door says what one spawned server runs (`_target`); the supervision is here.
"""

from __future__ import annotations

import logging
import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any, ClassVar, Self

logger = logging.getLogger(__name__)
# A server that dies at once (a bad setting, the database gone at start) is restarted at most
# this often, not in a tight loop.
RESTART_INTERVAL_S = 1.0


@dataclass(kw_only=True)
class SpawnedServers:
    """`count` spawned servers of one door; subclasses name the door and its server."""

    kind: ClassVar[str] = "server"
    count: int
    _children: list[BaseProcess] = field(default_factory=list)
    _started_at: list[float] = field(default_factory=list)
    # Each child's "listening" event, kept: a child unpickles it after its start, and an
    # event the parent dropped is gone by then (its semaphore unlinked).
    _ready: list[Any] = field(default_factory=list)
    _stopping: bool = False

    def _target(self) -> tuple[Callable[..., None], tuple[Any, ...]]:
        """The function one spawned server runs and its arguments (its "ready" event last)."""
        raise NotImplementedError

    def start(self, timeout: float = 60.0) -> Self:
        """Spawn them all, then return once each listens (or `timeout` passed; `check()`
        restarts one that died)."""
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
        """Start again any server that ended while the command still runs."""
        for index, child in enumerate(self._children):
            if self._stopping or child.is_alive():
                continue
            if time.monotonic() - self._started_at[index] < RESTART_INTERVAL_S:
                continue
            logger.warning(
                "%s process %s ended (exit %s); starting another",
                self.kind,
                child.pid,
                child.exitcode,
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
        # spawn, not fork: a fork would copy the command's engine, event loop, gRPC and database
        # threads mid-flight (grpcio does not support fork after its threads started).
        context = multiprocessing.get_context("spawn")
        ready = context.Event()
        target, args = self._target()
        process = context.Process(
            target=target, args=(*args, ready), name=f"locus-{self.kind}-process", daemon=True
        )
        process.start()
        return process, ready
