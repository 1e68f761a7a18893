"""`manage.py run_router` as the Procfile and the image start it: a real process on a scratch
database holding an emulated fleet, ready by /health, routing a streamed call with a service
key, recording its outcome, stopped by SIGTERM; and `--processes 2` on one port."""

from __future__ import annotations

import copy
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml

from optimizer.emulator import FleetThread
from optimizer.topology_files import parse_topology
from tests.conftest import REPO
from tests.console.placement.doors.extproc.test_command import (
    _children,
    _free_port,
    _owner,
    _sockets_on,
)
from tests.console.placement.doors.router.conftest import FLEET

pytestmark = pytest.mark.slow


@pytest.fixture
def served() -> Iterator[FleetThread]:
    with FleetThread(parse_topology(yaml.safe_dump(FLEET)), port_base=0) as fleet:
        yield fleet


def _start_router(
    tmp_path: Path, fleet: FleetThread, *extra: str
) -> tuple[subprocess.Popen[str], int, str, str]:
    """`run_router` on a scratch database holding FLEET at the emulated addresses, once it
    says it serves and /health answers 200; its port, the line it printed and a service key."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env |= {"LOCUS_VAR_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    data = copy.deepcopy(FLEET)
    for node in data["nodes"]:
        node["address"] = fleet.urls[node["name"]].removeprefix("http://")
    topology = tmp_path / "fleet.yaml"
    topology.write_text(yaml.safe_dump(data))
    manage = [sys.executable, "manage.py"]
    for args in (["migrate", "-v", "0"], ["load_topology", str(topology)]):
        subprocess.run([*manage, *args], cwd=REPO, env=env, check=True, capture_output=True)
    made = subprocess.run(
        [*manage, "create_api_key", "client", "--role", "service"],
        cwd=REPO, env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    key = made.stdout.strip()
    port = _free_port()
    process = subprocess.Popen(
        [*manage, "run_router", "--port", str(port), "--source", "app", *extra],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        while not (line := process.stdout.readline()).startswith("router:"):
            assert line, "run_router ended"
        deadline = time.monotonic() + 60
        while requests.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    except BaseException:
        process.kill()
        raise
    return process, port, line, key


def _stream(port: int, key: str) -> requests.Response:
    body = {"model": "m1", "prompt": "Hello", "max_tokens": 3, "stream": True}
    return requests.post(
        f"http://127.0.0.1:{port}/v1/completions",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=10,
    )


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output


def test_run_router_routes_and_records_with_no_client_help(
    tmp_path: Path, served: FleetThread
) -> None:
    process, port, line, key = _start_router(tmp_path, served)
    try:
        assert f"OpenAI API on http://127.0.0.1:{port}/v1" in line
        assert "service keys" in line and line.endswith("1 process\n")
        answer = _stream(port, key)
        assert answer.status_code == 200 and answer.content.endswith(b"data: [DONE]\n\n")
        decision_id = answer.headers["x-locus-decision-id"]
        assert _stream(port, "not-a-key").status_code == 401
        _stop(process)  # writes what its recorder holds
    finally:
        if process.poll() is None:
            process.kill()
    with sqlite3.connect(tmp_path / "locus.sqlite3") as db:
        row = db.execute(
            "SELECT node, ok, ttft_ms, e2e_ms FROM placement_decisionrecord WHERE id = ?",
            (decision_id,),
        ).fetchone()
    assert row[0] == answer.headers["x-locus-node"] and row[1] == 1
    assert 0 < row[2] <= row[3]


def test_run_router_processes_listen_on_one_port(tmp_path: Path, served: FleetThread) -> None:
    process, port, line, key = _start_router(tmp_path, served, "--processes", "2")
    try:
        assert line.endswith("2 processes\n")
        pids = {process.pid, *_children(process.pid)}
        listening = _owner(_sockets_on(port, "0A"), pids)
        assert sum(1 for n in listening.values() if n) == 2, listening
        # New connections spread over both: each call on a connection of its own.
        for _ in range(8):
            assert _stream(port, key).status_code == 200
        _stop(process)
        routers = [pid for pid, n in listening.items() if n]
        assert not [pid for pid in routers if Path(f"/proc/{pid}").exists()]
    finally:
        if process.poll() is None:
            process.kill()
