"""The README's first command, `make run`, brings up a living console: the demo's calls go
through the router to emulated nodes, decisions and telemetry flow within a few minutes,
Ctrl-C stops every process, and a second start reuses what the first built. Ctrl-C on a
terminal exits 0 within 30 s, every process drained, and the sign-in line is the last line of
the start-up, printed once.

Runs the real command (setup check, demo_prepare, the supervisor with web, workers, beat, the
picker, the router and the demo fleet) in a scratch data directory on free ports, on the
embedded defaults.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import REPO
from tests.support.terminal import CTRL_C, read_terminal, spawn_on_a_terminal

pytestmark = [
    pytest.mark.skipif(
        bool(os.environ.get("DATABASE_URL") or os.environ.get("REDIS_URL")),
        reason="the demo runs on the embedded defaults; the SQLite pass runs it",
    ),
]
BUDGET_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def demo_env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env |= {
        "LOCUS_VAR_DIR": str(tmp_path / "var"),
        "LOCUS_WEB_PORT": str(_free_port()),
        "LOCUS_ROUTER_PORT": str(_free_port()),
        "LOCUS_PICKER_PORT": str(_free_port()),
        "LOCUS_PICKER_HEALTH_PORT": str(_free_port()),
        "PYTHONUNBUFFERED": "1",
        # The background training run is real but small, to leave the CPU to the demo.
        "LOCUS_DEMO_TRAINING_TIMESTEPS": "2048",
        "LOCUS_TRAINING_BC_STEPS": "512",
    }
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def make_run(demo_env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    log = (tmp_path / "make-run.log").open("w")
    process = subprocess.Popen(
        ["make", "run"],
        cwd=REPO,
        env=demo_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    yield process
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    log.close()


def _processes_with(variable: str) -> list[str]:
    """Command lines of live processes whose environment holds `variable` (NAME=value)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if variable.encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


def _poll(what: str, check: Any, deadline: float) -> Any:
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except requests.RequestException:
            pass
        time.sleep(2)
    pytest.fail(f"{what} within {BUDGET_S}s")


def test_make_run_brings_up_a_living_console(
    make_run: subprocess.Popen[str], demo_env: dict[str, str], tmp_path: Path
) -> None:
    deadline = time.monotonic() + BUDGET_S
    base = f"http://127.0.0.1:{demo_env['LOCUS_WEB_PORT']}"
    _poll("the console answers", lambda: requests.get(f"{base}/healthz", timeout=2).ok, deadline)
    password_file = Path(demo_env["LOCUS_VAR_DIR"]) / "demo" / "admin-password"
    password = (
        _poll("demo_prepare wrote the admin password", password_file.is_file, deadline)
        and password_file.read_text().strip()
    )
    session = requests.Session()
    login = session.get(f"{base}/accounts/login/", timeout=5)
    assert login.ok
    session.post(
        f"{base}/accounts/login/",
        timeout=5,
        data={
            "username": "admin",
            "password": password,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        headers={"Referer": base},
    )

    def decisions() -> int:
        body = session.get(f"{base}/api/v1/overview", timeout=5).json()
        return int(body["decisions_in_window"]) if body["slo_attainment"] else 0

    def fresh_telemetry() -> int:
        latest = session.get(f"{base}/api/v1/telemetry/latest", timeout=5).json()
        return sum(
            1
            for n in latest.values()
            if n.get("running") is not None and n.get("kv_usage") is not None
        )

    assert _poll("decisions with outcomes flow", decisions, deadline) > 0
    assert _poll("exporter telemetry reaches the API", fresh_telemetry, deadline) > 0
    router = f"http://127.0.0.1:{demo_env['LOCUS_ROUTER_PORT']}/metrics"
    served = requests.get(router, timeout=5).text
    assert 'locus_router_calls_total{status="2xx"}' in served  # the demo's calls, routed
    page = session.get(f"{base}/", timeout=5)
    assert page.ok and '<div id="root"' in page.text
    lines = (tmp_path / "make-run.log").read_text().splitlines()
    signin = [i for i, line in enumerate(lines) if f"sign in as admin / {password}" in line]
    banners = [i for i, line in enumerate(lines) if "started (pid=" in line]
    assert banners and signin and signin[-1] > max(banners), "\n".join(lines[-40:])
    assert f"open {base}/" in lines[signin[-1]]

    os.killpg(make_run.pid, signal.SIGINT)  # what Ctrl-C sends to the foreground group
    make_run.wait(timeout=60)
    leftovers = _processes_with(f"LOCUS_VAR_DIR={demo_env['LOCUS_VAR_DIR']}")
    assert not leftovers, f"processes left running: {leftovers}"

    again = _manage(demo_env, "demo_prepare", "--no-training")
    assert f"admin / {password}" in again
    assert "loaded" not in again  # the fleet from the first start is reused
    # Every decision was asked by the demo's service key (the router authenticates the
    # clients with it) and its outcome recorded by the router: no client reports one now. The
    # telemetry came from each emulated node's own /metrics.
    routed = _manage(
        demo_env,
        "shell",
        "--no-imports",
        "-c",
        "from console.access.models import ApiKey; "
        "from console.inventory.models import Node; "
        "from console.placement.models import DecisionRecord as D; "
        "key = ApiKey.objects.get(name__startswith='demo-traffic-', revoked_at=None); "
        "done = D.objects.filter(ok__isnull=False); "
        "print(done.count(), done.exclude(decided_by='key:' + key.name).count(), "
        "sum(n.exporter_urls != [f'http://{n.address}/metrics'] for n in Node.objects.all()))",
    )
    outcomes, by_others, other_urls = map(int, routed.split())
    assert outcomes > 0 and by_others == 0 and other_urls == 0, routed
    runs = _manage(
        demo_env,
        "shell",
        "--no-imports",
        "-c",
        "from console.policies.models import TrainingRun; print(TrainingRun.objects.count())",
    )
    assert runs.strip() == "1"


@pytest.mark.slow  # ~90 s on 2 busy cores, most of it make's checks and the start-up
def test_ctrl_c_stops_make_run_with_status_0(demo_env: dict[str, str], tmp_path: Path) -> None:
    """As a user: `make run` in a terminal, the sign-in line, Ctrl-C, on the first start:
    the demo's training run is still running, and must neither hold the stop nor be lost
    (console/worker_stop.py)."""
    demo_env = demo_env | {"LOCUS_DEMO_TRAINING_TIMESTEPS": str(10**7)}
    process, master = spawn_on_a_terminal(["make", "run"], cwd=REPO, env=demo_env)
    shown = ""
    try:
        shown = read_terminal(master, "sign in as admin", timeout=BUDGET_S)
        assert "sign in as admin" in shown, shown[-4000:]
        shown += read_terminal(master, "\n", timeout=10)  # the rest of that line
        os.write(master, CTRL_C)
        shown += read_terminal(master, "\x00never", timeout=30)  # until make ends
        status = process.wait(timeout=5)
    finally:
        (tmp_path / "terminal.log").write_text(shown)
        if process.poll() is None:
            # The supervisor runs in the terminal's foreground group, not make's.
            with contextlib.suppress(OSError):
                os.killpg(os.tcgetpgrp(master), signal.SIGKILL)
            os.killpg(process.pid, signal.SIGKILL)
        os.close(master)
    lines = shown.splitlines()
    assert status == 0, "\n".join(lines[-40:])
    stop = next(i for i, line in enumerate(lines) if "SIGINT received" in line)
    signin = [i for i, line in enumerate(lines) if "sign in as admin" in line]
    assert signin == [stop - 1], "\n".join(lines[max(0, stop - 20) : stop + 1])
    after = "\n".join(lines[stop:])
    for process_name in (
        "web",
        "worker-telemetry",
        "worker-jobs",
        "beat",
        "fleet",
        "picker",
        "router",
    ):
        assert f"{process_name}.1 stopped" in after, after
    for trouble in ("SIGKILL", "exited with signal", "Error", "Interrupt", "Traceback"):
        assert trouble not in after, after
    leftovers = _processes_with(f"LOCUS_VAR_DIR={demo_env['LOCUS_VAR_DIR']}")
    assert not leftovers, f"processes left running: {leftovers}"
    # The training run went back to the queue, for the next start.
    status = _manage(
        demo_env,
        "shell",
        "--no-imports",
        "-c",
        "from console.policies.models import TrainingRun; print(TrainingRun.objects.get().status)",
    )
    assert status.strip() == "queued"
