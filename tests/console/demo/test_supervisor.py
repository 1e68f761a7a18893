"""The demo's process supervisor (console/demo/supervisor.py) on small Procfiles: a stop
drains every process and exits 0, one that will not stop is killed and named, the sign-in
output comes after the others' start-up, and a terminal's Ctrl-C reaches the supervisor
alone, not the make (here: the shell) that started it."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.demo.supervisor import Supervisor, main
from tests.conftest import REPO
from tests.support.terminal import CTRL_C, read_terminal, spawn_on_a_terminal

PY = shlex.quote(sys.executable)
# Prints "up", then waits; SIGTERM ends it with status 0 after printing "drained".
DRAINS = (
    f'{PY} -c "import signal,sys,time; signal.signal(signal.SIGTERM, lambda *a: '
    f"(print('drained', flush=True), sys.exit(0))); print('up', flush=True); time.sleep(60)\""
)
STUBBORN = (
    f'{PY} -c "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
    f"print('up', flush=True); time.sleep(60)\""
)


def _procfile(tmp_path: Path, **commands: str) -> Path:
    path = tmp_path / "Procfile"
    path.write_text("".join(f"{name}: {cmd}\n" for name, cmd in commands.items()))
    return path


def _run(tmp_path: Path, *args: str, **commands: str) -> subprocess.Popen[str]:
    procfile = str(_procfile(tmp_path, **commands))
    return subprocess.Popen(
        [sys.executable, "-m", "console.demo.supervisor", "-f", procfile, *args],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _read_until(process: subprocess.Popen[str], needle: str, count: int = 1) -> list[str]:
    assert process.stdout is not None
    lines: list[str] = []
    while sum(needle in line for line in lines) < count:
        line = process.stdout.readline()
        assert line, f"ended before {needle!r}:\n{''.join(lines)}"
        lines.append(line)
    return lines


def test_a_stop_drains_every_process_and_exits_0(tmp_path: Path) -> None:
    process = _run(tmp_path, a=DRAINS, b=DRAINS)
    _read_until(process, "| up", count=2)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 0, out
    assert out.count("| drained") == 2
    assert "a.1 stopped (rc=0)" in out and "b.1 stopped (rc=0)" in out
    assert "SIGKILL" not in out


def test_a_process_that_will_not_stop_is_killed_and_named(tmp_path: Path) -> None:
    process = _run(tmp_path, "--grace", "1", good=DRAINS, stuck=STUBBORN)
    _read_until(process, "| up", count=2)
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 1, out
    assert "sending SIGKILL to stuck.1" in out
    assert "killed after 1 s without stopping: stuck.1" in out
    assert "sending SIGKILL to good.1" not in out


def test_a_process_that_ends_stops_the_others_with_its_status(tmp_path: Path) -> None:
    process = _run(tmp_path, server=DRAINS, broken=f"{PY} -c 'import sys; sys.exit(3)'")
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 3, out
    assert "broken.1 ended (rc=3): stopping all" in out
    assert "server.1 stopped (rc=0)" in out


def test_held_output_comes_after_the_others_start_up(tmp_path: Path) -> None:
    chatty = (
        f"{PY} -c \"import time; [(print('line', i, flush=True), time.sleep(0.2)) "
        f'for i in range(4)]; time.sleep(60)"'
    )
    signin = f"{PY} -c \"import time; print('sign in here', flush=True); time.sleep(60)\""
    process = _run(tmp_path, "--last", "signin", signin=signin, chatty=chatty)
    try:
        lines = _read_until(process, "sign in here")
    finally:
        process.terminate()
        process.communicate(timeout=30)
    printed = [line.split("| ", 1)[1].strip() for line in lines if "system" not in line]
    assert printed[-1] == "sign in here" and "line 3" in printed, lines


def test_it_refuses_a_missing_procfile_and_a_bad_grace(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["-f", str(tmp_path / "nothing")])
    with pytest.raises(SystemExit):
        main(["-f", str(_procfile(tmp_path, a=DRAINS)), "--grace", "0"])
    with pytest.raises(SystemExit, match="--last nobody: not in the Procfile"):
        Supervisor({"a": DRAINS}, grace_s=1, last={"nobody"})


def test_ctrl_c_on_a_terminal_stops_the_supervisor_not_its_parent(tmp_path: Path) -> None:
    procfile = _procfile(tmp_path, a=DRAINS)
    # The parent stands for make: it must outlive the Ctrl-C and see status 0.
    script = (
        f"{PY} -m console.demo.supervisor -f {shlex.quote(str(procfile))}; "
        "echo parent-saw-status-$?"
    )
    process, master = spawn_on_a_terminal(["/bin/sh", "-c", script], cwd=REPO)
    try:
        shown = read_terminal(master, "| up", timeout=30)
        assert "| up" in shown, shown
        os.write(master, CTRL_C)  # the terminal signals its foreground group
        shown += read_terminal(master, "parent-saw-status-", timeout=30)
        shown += read_terminal(master, "\n", timeout=5)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        os.close(master)
    assert "SIGINT received" in shown
    assert "a.1 stopped (rc=0)" in shown
    assert "parent-saw-status-0" in shown, shown


def test_a_killed_supervisor_takes_its_processes_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    child = (
        f"{PY} -c \"import os,time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
        "print('up', flush=True); time.sleep(60)\""
    )
    process = _run(tmp_path, a=child)
    _read_until(process, "| up")
    child_pid = int(pid_file.read_text())
    process.kill()
    process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child_pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's wait is missing
