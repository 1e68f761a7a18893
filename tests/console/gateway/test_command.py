"""`manage.py run_picker` as the Procfile and the image start it: a real process on a scratch
database with the demo fleet, ready by gRPC health, deciding over ext_proc, stopped by
SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.conftest import REPO, TOPOLOGIES
from tests.console.gateway.envoy_client import (
    EnvoyStream,
    endpoints_of,
    request_body,
    request_headers,
)

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_run_picker_serves_the_demo_fleet(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env |= {"LOCUS_VAR_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    manage = [sys.executable, "manage.py"]
    for args in (["migrate", "-v", "0"], ["load_topology", str(TOPOLOGIES / "fleet-demo.yaml")]):
        subprocess.run([*manage, *args], cwd=REPO, env=env, check=True, capture_output=True)
    port, health_port = _free_port(), _free_port()
    process = subprocess.Popen(
        [
            *manage,
            "run_picker",
            "--port",
            str(port),
            "--health-port",
            str(health_port),
            "--source",
            "munich-app",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{health_port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
            stub = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                reply = stub.Check(health_pb2.HealthCheckRequest(service="readiness"), timeout=5)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    break
                time.sleep(0.2)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stream = EnvoyStream(channel)
            body = {"model": "qwen2.5-7b", "messages": [{"role": "user", "content": "Hallo"}]}
            stream.send(
                request_headers(), request_body(json.dumps(body).encode(), end_of_stream=True)
            )
            endpoints = endpoints_of(stream.recv(2)[0])[0]
            assert all(e.startswith("127.0.1.") and e.endswith(":8000") for e in endpoints)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
        assert process.returncode == 0, output
        assert f"ext_proc on 127.0.0.1:{port}" in output
    finally:
        if process.poll() is None:
            process.kill()
