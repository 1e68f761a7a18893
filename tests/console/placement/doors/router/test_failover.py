"""Failover of `run_router --processes 3` under load (issue #29): one router process killed
(SIGKILL, a crash) and another stopped (SIGTERM, a rolling restart) while calls flow. A client
that retries a call whose connection failed, as OpenAI's SDKs do, sees no failed call; the
command starts a replacement for each, which joins the port once it can decide; and every
answered call's decision is in the database with its outcome, the crashed process's too: its
recorder journal is adopted by a live one (docs/deploying.md, "Failover")."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from optimizer.emulator import FleetThread
from tests.console.placement.doors.extproc.test_command import _children, _owner, _sockets_on
from tests.console.placement.doors.router.test_command import _start_router, _stop, served

pytestmark = pytest.mark.slow
__all__ = ["served"]  # the emulated fleet fixture, shared with test_command.py
CLIENTS = 4
RETRIES = 3  # attempts after the first; OpenAI's Python SDK makes 2 by default


def _listening(port: int, command: int) -> set[int]:
    """The router processes with a socket listening on `port`."""
    pids = {command, *_children(command)}
    return {pid for pid, n in _owner(_sockets_on(port, "0A"), pids).items() if n}


def _replaced(pid: int, port: int, command: int) -> bool:
    """Whether `pid` no longer listens and three routers do again."""
    listening = _listening(port, command)
    return pid not in listening and len(listening) == 3


def _until(check: Callable[[], bool], output: list[str], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out; the command said:\n" + "".join(output)
        time.sleep(0.1)


class Load:
    """Clients calling through the router back to back, retrying a call whose connection
    failed (only that: a 503 from a process not ready would count as a failure)."""

    def __init__(self, port: int, key: str) -> None:
        self.url = f"http://127.0.0.1:{port}/v1/completions"
        self.headers = {"Authorization": f"Bearer {key}"}
        self.answered: list[tuple[float, str]] = []  # (when, decision id)
        self.failed: list[str] = []
        self.retried = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client) for _ in range(CLIENTS)]

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)

    def _client(self) -> None:
        body = {"model": "m1", "prompt": "Hello", "max_tokens": 2}
        while not self._stop.is_set():
            for _attempt in range(RETRIES + 1):
                try:  # a connection per call, so every process serves some when one dies
                    answer = requests.post(self.url, json=body, headers=self.headers, timeout=30)
                except requests.ConnectionError:
                    self.retried += 1
                    continue
                if answer.status_code == 200:
                    self.answered.append((time.time(), answer.headers["x-locus-decision-id"]))
                else:
                    self.failed.append(f"{answer.status_code} {answer.text[:200]}")
                break
            else:
                self.failed.append(f"no answer after {RETRIES} retries")


def test_killing_router_processes_under_load_fails_no_call_and_loses_no_answer(
    tmp_path: Path, served: FleetThread
) -> None:
    process, port, _, key = _start_router(tmp_path, served, "--processes", "3")
    output: list[str] = []  # read on, or a full pipe would block the command's logging
    assert process.stdout is not None
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        _until(lambda: len(_listening(port, process.pid)) == 3, output)
        with Load(port, key) as load:
            _until(lambda: len(load.answered) >= 20, output)
            crashed, stopped = sorted(_listening(port, process.pid) - {process.pid})
            os.kill(crashed, signal.SIGKILL)
            _until(lambda: _replaced(crashed, port, process.pid), output)
            os.kill(stopped, signal.SIGTERM)
            _until(lambda: _replaced(stopped, port, process.pid), output)
            count = len(load.answered)
            _until(lambda: len(load.answered) >= count + 20, output)
        _stop(process)  # writes what the routers' recorders hold
    finally:
        if process.poll() is None:
            process.kill()
    assert not load.failed, load.failed[:5]
    with sqlite3.connect(tmp_path / "locus.sqlite3") as db:
        recorded = {
            row[0]: row[1]
            for row in db.execute("SELECT id, ok FROM placement_decisionrecord").fetchall()
        }
    missing = [(at, d) for at, d in load.answered if recorded.get(d) is None]
    assert not missing, f"{len(missing)} answered calls lack a record or outcome: {missing[:3]}"
    # Every segment adopted and written: the journal directory is empty after the stop.
    assert list((tmp_path / "record-journal").iterdir()) == []
