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

import signal
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, ClassVar

from console.placement.doors.spawned import SpawnedServers


@dataclass(kw_only=True)
class RouterProcesses(SpawnedServers):
    """`count` spawned routers serving on the port(s) the command's own router bound."""

    kind: ClassVar[str] = "router"
    port: int
    source: str | None
    host: str

    def _target(self) -> tuple[Callable[..., None], tuple[Any, ...]]:
        return serve_one, (self.port, self.source, self.host)


def serve_one(port: int, source: str | None, host: str, ready: Any) -> None:
    """A spawned router: the same server as the command's own, on the same port."""
    import django

    django.setup()
    # Imported only now: a spawned process starts bare, and these need Django set up.
    from django.db import connections

    from console.placement.doors.router.app import RouterServer
    from console.placement.engine.runtime import runtime

    # Join the shared port only once this process can decide: the kernel gives a listener on
    # it new connections at once (SO_REUSEPORT), and a replacement for a dead process that had
    # no snapshot yet would answer them 503 (this also starts the shared live view, which
    # warms from the other deciders in its first round).
    runtime().ensure_started()
    connections.close_all()
    server = RouterServer(port=port, source=source, host=host).start()
    ready.set()

    def stop(signum: int, frame: FrameType | None) -> None:
        server.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command stops its routers itself
    server.wait()
    runtime().recorder.stop(timeout=10.0)
