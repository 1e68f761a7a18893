"""`manage.py run_picker` as the Procfile and the image start it: a real process on a scratch
database with the demo fleet, ready by gRPC health, deciding over ext_proc, stopped by
SIGTERM."""

from __future__ import annotations

import contextlib
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
from tests.console.placement.doors.extproc.envoy_client import (
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


def _start_picker(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], int, str]:
    """`run_picker` on a scratch database with the demo fleet, once its readiness is SERVING;
    its ext_proc port and the line it printed."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env |= {"LOCUS_VAR_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    manage = [sys.executable, "manage.py"]
    for args in (["migrate", "-v", "0"], ["load_topology", str(TOPOLOGIES / "fleet-demo.yaml")]):
        subprocess.run([*manage, *args], cwd=REPO, env=env, check=True, capture_output=True)
    port, health_port = _free_port(), _free_port()
    ports = ["--port", str(port), "--health-port", str(health_port)]
    process = subprocess.Popen(
        [*manage, "run_picker", *ports, "--source", "munich-app", *extra],
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
        # The command says it serves once every process listens.
        assert process.stdout is not None
        while not (line := process.stdout.readline()).startswith("picker:"):
            assert line, "run_picker ended"
    except BaseException:
        process.kill()
        raise
    return process, port, line


def _decide(channel: grpc.Channel) -> list[str]:
    stream = EnvoyStream(channel)
    body = {"model": "qwen2.5-7b", "messages": [{"role": "user", "content": "Hallo"}]}
    stream.send(request_headers(), request_body(json.dumps(body).encode(), end_of_stream=True))
    return endpoints_of(stream.recv(2)[0])[0]


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    return output


def test_run_picker_serves_the_demo_fleet(tmp_path: Path) -> None:
    process, port, line = _start_picker(tmp_path)
    assert f"ext_proc on 127.0.0.1:{port}" in line and line.endswith("1 process\n")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            endpoints = _decide(channel)
            assert all(e.startswith("127.0.1.") and e.endswith(":8000") for e in endpoints)
        _stop(process)
    finally:
        if process.poll() is None:
            process.kill()


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.add(int(entry.name))
    return found


def _sockets_on(port: int, state: str) -> set[int]:
    """Inodes of the TCP sockets whose local port is `port`, in `state` (proc(5),
    /proc/net/tcp: 01 ESTABLISHED, 0A LISTEN)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rpartition(":")[2], 16) == port and fields[3] == state:
                inodes.add(int(fields[9]))
    return inodes


def _owner(inodes: set[int], pids: set[int]) -> dict[int, int]:
    """How many of `inodes` each process holds open."""
    held = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            links = [os.readlink(f) for f in Path(f"/proc/{pid}/fd").iterdir()]
            held[pid] = sum(1 for link in links if link in {f"socket:[{i}]" for i in inodes})
    return held


def test_run_picker_processes_answer_on_one_port(tmp_path: Path) -> None:
    """--processes 2: two pickers listen on the port, and both answer streams (each
    connection is one process's, so several connections reach both)."""
    process, port, line = _start_picker(tmp_path, "--processes", "2")
    assert line.endswith("2 processes\n")
    channels: list[grpc.Channel] = []
    try:
        pids = {process.pid, *_children(process.pid)}
        listening = _owner(_sockets_on(port, "0A"), pids)
        assert sum(1 for n in listening.values() if n) == 2, listening
        answered: dict[int, int] = {}
        # A connection of its own per channel; the kernel spreads them over the listeners.
        while len(channels) < 64 and sum(1 for n in answered.values() if n) < 2:
            channel = grpc.insecure_channel(
                f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
            )
            channels.append(channel)
            assert _decide(channel)
            answered = _owner(_sockets_on(port, "01"), pids)
        assert sum(1 for n in answered.values() if n) == 2, answered
        # A spawned picker that dies is started again, and listens on the port again.
        (spawned,) = [pid for pid, n in listening.items() if n and pid != process.pid]
        os.kill(spawned, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pids = {process.pid, *_children(process.pid)} - {spawned}
            listening = _owner(_sockets_on(port, "0A"), pids)
            if sum(1 for n in listening.values() if n) == 2:
                break
            time.sleep(0.2)
        assert sum(1 for n in listening.values() if n) == 2, listening
        _stop(process)
        # The spawned picker stopped with the command, not orphaned.
        pickers = [pid for pid, n in listening.items() if n]
        assert not [pid for pid in pickers if Path(f"/proc/{pid}").exists()]
    finally:
        for channel in channels:
            channel.close()
        if process.poll() is None:
            process.kill()
