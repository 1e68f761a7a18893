"""The picker's gRPC servers: ext_proc on one port, gRPC health on another (llm-d's layout:
9002 and 9003), both on one asyncio loop.

Each message is answered on the loop without a thread hop: a decision is tens of
microseconds of CPU with no I/O (docs/architecture.md rule 2), cheaper than handing it to a
worker thread, as the REST fast path found (console/placement/doors/fastpath.py).

Health (proposal 004, "Health Checking"): `liveness` is SERVING while the process answers;
`readiness` and `envoy.service.ext_proc.v3.ExternalProcessor` are NOT_SERVING until the
engine holds an inventory snapshot, and follow it from then on.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
from django.conf import settings
from envoy.service.ext_proc.v3 import external_processor_pb2 as ep
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ep_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio

from console.placement.doors.extproc.metrics import serve_metrics
from console.placement.doors.extproc.picker import PickerStream
from console.placement.doors.loopserver import LoopServer, start_engine
from console.placement.engine.runtime import runtime

logger = logging.getLogger(__name__)
EXT_PROC_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor"
READY_SERVICES = ("readiness", EXT_PROC_SERVICE)
READINESS_POLL_S = 0.2
# Several pickers may listen on one port (`run_picker --processes`, console/placement/doors/extproc/
# processes.py). grpcio sets SO_REUSEPORT by default on Linux; said here, since it is relied on.
SERVER_OPTIONS = (("grpc.so_reuseport", 1),)
# Room for a message's own fields around its body chunk (headers, flags; a few bytes).
MESSAGE_SLACK_BYTES = 64 * 1024


def picker_options() -> tuple[tuple[str, int], ...]:
    """The ext_proc server's options: grpcio refuses a received message over 4 MiB by default
    (RESOURCE_EXHAUSTED, before the picker sees it), which would make a body sent in one
    message, as an Envoy buffering the whole body sends it, fail far below
    LOCUS_PICKER_MAX_BODY_BYTES and without the picker's 413. Each message may carry up to that
    limit instead; the picker refuses the body with 413 once it passes it
    (tests/bench/bench_large_body.py measured both)."""
    limit = settings.LOCUS_PICKER_MAX_BODY_BYTES + MESSAGE_SLACK_BYTES
    return (*SERVER_OPTIONS, ("grpc.max_receive_message_length", limit))


class Picker(ep_grpc.ExternalProcessorServicer):
    """`envoy.service.ext_proc.v3.ExternalProcessor`: one stream per HTTP request."""

    def __init__(self, *, source: str | None) -> None:
        self.source = source

    async def Process(  # noqa: N802 (the gRPC method's name)
        self, request_iterator: AsyncIterator[ep.ProcessingRequest], context: Any
    ) -> AsyncIterator[ep.ProcessingResponse]:
        stream = PickerStream(self.source)
        try:
            async for message in request_iterator:
                for answer in stream.handle(message):
                    yield answer
                if stream.finished:
                    return
        finally:
            stream.close()


@dataclass
class PickerServer(LoopServer):
    """Both servers on a loop of their own thread; `start()` returns once they listen."""

    port: int
    health_port: int
    source: str | None = None
    host: str = "[::]"
    metrics_port: int | None = None
    bound_port: int = 0
    bound_health_port: int = 0
    bound_metrics_port: int = 0
    _metrics: Any = None
    _engine: threading.Thread | None = None

    def start(self) -> PickerServer:
        if self.metrics_port is not None:
            self._metrics = serve_metrics(self.host.strip("[]"), self.metrics_port)
            self.bound_metrics_port = int(self._metrics.server_port)
        self._launch("locus-picker")
        # The engine starts once the ports are bound: a picker that cannot listen never
        # loads a snapshot (whose thread would outlive the failed start and log against a
        # database the caller has moved on from).
        self._engine = threading.Thread(
            target=start_engine, name="locus-picker-engine", daemon=True
        )
        self._engine.start()
        return self

    def stop(self) -> None:
        if self._metrics is not None:
            self._metrics.shutdown()
            self._metrics.server_close()
        self._halt()
        if self._engine is not None:
            # Its first snapshot may still be loading: wait for it, so nothing of this
            # picker reads the database after stop() returns.
            self._engine.join(30)

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        picker = grpc.aio.server(options=picker_options())
        ep_grpc.add_ExternalProcessorServicer_to_server(Picker(source=self.source), picker)
        self.bound_port = picker.add_insecure_port(f"{self.host}:{self.port}")
        health = health_aio.HealthServicer()
        checks = grpc.aio.server(options=SERVER_OPTIONS)
        health_pb2_grpc.add_HealthServicer_to_server(health, checks)
        self.bound_health_port = checks.add_insecure_port(f"{self.host}:{self.health_port}")
        await health.set("liveness", health_pb2.HealthCheckResponse.SERVING)
        await health.set("", health_pb2.HealthCheckResponse.SERVING)
        for name in READY_SERVICES:
            await health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await picker.start()
        await checks.start()
        self._started.set()
        watcher = asyncio.create_task(_follow_readiness(health))
        try:
            await self._stop.wait()
        finally:
            watcher.cancel()
            await health.enter_graceful_shutdown()
            await picker.stop(grace=2)
            await checks.stop(grace=0)


async def _follow_readiness(health: Any) -> None:
    ready: bool | None = None
    while True:
        now = runtime().engine.snapshot is not None
        if now != ready:
            ready = now
            status = (
                health_pb2.HealthCheckResponse.SERVING
                if now
                else health_pb2.HealthCheckResponse.NOT_SERVING
            )
            for name in READY_SERVICES:
                await health.set(name, status)
            logger.info("picker readiness: %s", "SERVING" if now else "NOT_SERVING")
        await asyncio.sleep(READINESS_POLL_S)
