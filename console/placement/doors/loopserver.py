"""A door's server on an asyncio loop of its own thread (the picker's gRPC servers, the router's
HTTP server), and the command's life around it: start, serve until SIGTERM or Ctrl-C, stop the
spawned copies, write what the recorder still holds.

Both doors run their loop off the command's main thread so that the main thread stays free to
supervise the `--processes` copies (`spawned.py`) once a second and to take signals: Python runs
signal handlers on the main thread only (signal(2) module docs, "Signals and threads").
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

from django.db import connections

from console.placement.doors.spawned import SpawnedServers
from console.placement.engine.runtime import runtime

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


@dataclass
class LoopServer:
    """The loop thread's plumbing; a door's server says what it serves (`_serve`), which sets
    `_started` once it listens and returns once `_stop` is set."""

    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _started: threading.Event = field(default_factory=threading.Event, init=False)
    _stop: asyncio.Event | None = field(default=None, init=False)
    _error: BaseException | None = field(default=None, init=False)

    async def _serve(self) -> None:
        raise NotImplementedError

    def _launch(self, name: str) -> None:
        """Run `_serve` on a new thread; return once it listens, or raise why it could not."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._started.wait(START_TIMEOUT_S)
        if self._error is not None:
            raise self._error

    def _halt(self) -> None:
        """Ask the loop to stop serving and wait for its thread."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)

    def stop(self) -> None:
        self._halt()

    def wait(self, every: Callable[[], None] | None = None) -> None:
        """Until the server stops; `every` runs about once a second meanwhile."""
        assert self._thread is not None
        while self._thread.is_alive():
            self._thread.join(1.0)
            if every is not None:
                every()

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as exc:  # a port in use: `_launch` raises it on the caller's thread
            self._error = exc
            self._started.set()
        finally:
            self._loop.close()


def start_engine() -> None:
    """Load the first snapshot and start the engine's refresh and recorder threads (database
    work: never on a loop). The thread running this ends here: its connections are closed, not
    left to linger until garbage collection."""
    try:
        runtime().ensure_started()
    finally:
        connections.close_all()


def serve_until_stopped(server: LoopServer, others: SpawnedServers) -> None:
    """The command's main thread: supervise `others` until SIGTERM or Ctrl-C stops `server`,
    stop them, then write what the recorder still holds, so nothing decided is lost on exit."""

    def stop(signum: int, frame: FrameType | None) -> None:
        server.stop()

    signal.signal(signal.SIGTERM, stop)
    try:
        server.wait(every=others.check)
    except KeyboardInterrupt:
        server.stop()
    finally:
        others.stop()
    runtime().recorder.stop(timeout=10.0)
