"""gRPC health of the picker (proposal 004, "Health Checking"): liveness at once, readiness
and the ext_proc service only once the engine holds a snapshot."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import pytest
from django.core.management import CommandError, call_command
from grpc_health.v1 import health_pb2, health_pb2_grpc

from console.inventory.services import topology_import
from console.placement.doors.extproc.server import PickerServer
from console.placement.engine.runtime import current_runtime, runtime
from optimizer.topology_files import parse_topology
from tests.console.placement.doors.extproc.conftest import fleet_with_addresses

pytestmark = pytest.mark.django_db
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _status(stub: Any, service: str) -> int:
    reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    return int(reply.status)


def _eventually(check: Any, expected: int) -> int:
    deadline = time.monotonic() + 5
    while (got := check()) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return int(got)


def test_readiness_follows_the_engine_snapshot(engine_settings: Any) -> None:
    # An empty inventory is no fleet: the engine has no snapshot yet.
    server = PickerServer(port=0, health_port=0, host="127.0.0.1").start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.bound_health_port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            assert _status(stub, "liveness") == SERVING
            for service in ("readiness", "envoy.service.ext_proc.v3.ExternalProcessor"):
                assert _eventually(lambda s=service: _status(stub, s), NOT_SERVING) == NOT_SERVING
            topology_import(topology=parse_topology(fleet_with_addresses()[0]))
            assert runtime().refresh()
            for service in ("readiness", "envoy.service.ext_proc.v3.ExternalProcessor"):
                assert _eventually(lambda s=service: _status(stub, s), SERVING) == SERVING
            with pytest.raises(grpc.RpcError) as info:
                _status(stub, "no-such-service")
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        server.stop()


def test_a_picker_without_a_snapshot_answers_503_not_silence(engine_settings: Any) -> None:
    from tests.console.placement.doors.extproc.envoy_client import (
        EnvoyStream,
        immediate,
        request_body,
        request_headers,
    )

    server = PickerServer(port=0, health_port=0, source="munich-app", host="127.0.0.1").start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.bound_port}") as channel:
            stream = EnvoyStream(channel)
            stream.send(
                request_headers("/v1/completions"),
                request_body(b'{"model": "m", "prompt": "x"}', end_of_stream=True),
            )
            assert immediate(stream.recv()[0])[0] == 503
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "atlantis"], "--source 'atlantis': no such request source"),
        (["--port", "70000"], "--port 70000: not a TCP port"),
        (["--port", "9100", "--health-port", "9100"], "the same port"),
        (["--metrics-port", "9003"], "the same port"),
        (["--processes", "0"], "--processes 0: between 1 and 64"),
    ],
)
def test_run_picker_refuses_bad_arguments(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("run_picker", *args)


def test_run_picker_names_a_port_in_use(engine_settings: Any) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match=f"cannot listen on 127.0.0.1:{port}"):
            call_command("run_picker", "--port", str(port), "--health-port", "0")
    # A picker that could not listen loads nothing: no engine thread outlives the failed
    # start to read the database after the command returned.
    assert current_runtime() is None
    assert "locus-picker-engine" not in {t.name for t in threading.enumerate()}


def test_stop_waits_for_the_engine_start(engine_settings: Any, caplog: Any) -> None:
    """Nothing of a stopped picker touches the database afterwards: its engine thread (the
    first snapshot, on an empty inventory here) has ended, and said plainly why it has none."""
    server = PickerServer(port=0, health_port=0, host="127.0.0.1").start()
    server.stop()
    assert "locus-picker-engine" not in {t.name for t in threading.enumerate()}
    assert runtime().engine.snapshot is None
    assert "the inventory has no nodes yet" in caplog.text
    assert "Tuple should have" not in caplog.text
