"""Servers for the benchmarks: free ports, a process started and awaited until ready, and the
CPU time a process tree spent (its own threads and every worker it forked), which a shared
machine's other load hardly moves, unlike requests/s."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def scratch_server_env(topology: Path) -> tuple[dict[str, str], str]:
    """A scratch console for a server under test: (its environment, a service key), on a
    fresh SQLite database in a temporary directory holding `topology`."""
    var = Path(tempfile.mkdtemp(prefix="locus-bench-"))
    env = {
        **os.environ,
        "SECRET_KEY": "bench",
        "DEBUG": "false",
        "LOCUS_VAR_DIR": str(var),
        "LOG_LEVEL": "WARNING",
        "DATABASE_CONN_MAX_AGE": "60",
    }
    manage = [sys.executable, str(REPO / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True, cwd=REPO)
    load = [*manage, "load_topology", str(topology)]
    subprocess.run(load, env=env, check=True, cwd=REPO, capture_output=True)
    key = subprocess.run(
        [*manage, "create_api_key", f"bench-{time.time_ns()}", "--role", "service"],
        env=env,
        check=True,
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return env, key


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_cpu_s(pid: int) -> float:
    """User + system CPU time of a process and its live descendants (uvicorn's workers, the
    picker's processes), all threads (proc(5), /proc/PID/stat)."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stats[int(entry.name)] = (entry / "stat").read_text().rpartition(")")[2].split()
    tree, total = {pid}, 0.0
    for _ in range(4):  # four generations are plenty
        tree |= {p for p, f in stats.items() if int(f[1]) in tree}
    for p in tree:
        if p in stats:
            total += int(stats[p][11]) + int(stats[p][12])
    return total / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def process(
    cmd: list[str], env: dict[str, str], ready: Callable[[], bool], settle: float = 0.0
) -> Iterator[int]:
    server = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if ready():
                break
            time.sleep(0.2)
        else:
            raise SystemExit(f"{cmd[2:4]} did not get ready")
        time.sleep(settle)  # the other processes of a multi-process server start meanwhile
        yield server.pid
    finally:
        server.terminate()
        server.wait(timeout=15)


def http_ok(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1)
        return True
    except OSError:
        return False


def tcp_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def grpc_ready(port: int) -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="readiness"), timeout=1
            )
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)
    except grpc.RpcError:
        return False
