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

import signal
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, ClassVar

from console.placement.doors.spawned import SpawnedServers


@dataclass(kw_only=True)
class PickerProcesses(SpawnedServers):
    """`count` spawned pickers serving on the port(s) the command's own picker bound."""

    kind: ClassVar[str] = "picker"
    port: int
    health_port: int
    source: str | None
    host: str

    def _target(self) -> tuple[Callable[..., None], tuple[Any, ...]]:
        return serve_one, (self.port, self.health_port, self.source, self.host)


def serve_one(port: int, health_port: int, source: str | None, host: str, ready: Any) -> None:
    """A spawned picker: the same server as the command's own, on the same ports."""
    import django

    django.setup()
    # Imported only now: a spawned process starts bare, and these load models, which need
    # Django set up first.
    from django.db import connections

    from console.placement.doors.extproc.server import PickerServer
    from console.placement.engine.runtime import runtime

    # Join the shared port only once this process can decide: the kernel gives a listener on
    # it new connections at once (SO_REUSEPORT), and a replacement for a dead process that had
    # no snapshot yet would answer them 503 (this also starts the shared live view, which
    # warms from the other deciders in its first round).
    runtime().ensure_started()
    connections.close_all()
    server = PickerServer(port=port, health_port=health_port, source=source, host=host).start()
    ready.set()

    def stop(signum: int, frame: FrameType | None) -> None:
        server.stop()

    signal.signal(signal.SIGTERM, stop)
    # Ctrl-C reaches the whole process group; the command stops its pickers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server.wait()
    runtime().recorder.stop(timeout=10.0)
