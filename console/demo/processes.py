"""One Procfile process for the demo's supervisor (console/demo/supervisor.py): started in a
session of its own, its output relayed line by line, stopped by a signal to it alone."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from typing import IO

# prctl(2) PR_SET_PDEATHSIG: a signal the kernel sends a process when its parent dies.
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the supervisor dies, even by SIGKILL, so a
    killed supervisor never leaves the demo's processes running on (Linux only; elsewhere
    a no-op)."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Printer:
    """honcho's line format, `HH:MM:SS name.1 | line`, one writer at a time."""

    def __init__(self, *, width: int, out: IO[str] | None = None) -> None:
        self.width = width
        self.out = out or sys.stdout
        self.lock = threading.Lock()
        self.last_unheld_at = time.monotonic()

    def line(self, label: str, text: str, *, held: bool = False) -> None:
        with self.lock:
            self.out.write(f"{datetime.now():%H:%M:%S} {label:<{self.width}} | {text}\n")
            self.out.flush()
            if not held:
                self.last_unheld_at = time.monotonic()

    def system(self, text: str) -> None:
        self.line("system", text)


class Process:
    """A Procfile entry. The command runs under `sh -c "exec …"`, so the pid is the program
    itself (SIGTERM reaches it, not a shell that would die of it and orphan the program): an
    entry is one command, as the project's Procfile's are. It runs in a session of its own,
    so a terminal's Ctrl-C reaches it only through the supervisor."""

    def __init__(self, name: str, command: str, *, held: bool = False) -> None:
        self.name = name
        self.label = f"{name}.1"
        self.command = command
        self.held = held
        self._popen: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._pending: list[tuple[float, str]] = []
        self._pending_lock = threading.Lock()
        self.terminated = False

    @property
    def pid(self) -> int:
        assert self._popen is not None
        return self._popen.pid

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    @property
    def stopped_cleanly(self) -> bool:
        """Exited 0, or ended by the SIGTERM it was sent: uvicorn, like many servers, shuts
        down gracefully and then re-raises the signal, so its status says how it was asked."""
        return self.returncode == 0 or (self.terminated and self.returncode == -signal.SIGTERM)

    def start(self, printer: Printer) -> None:
        self._popen = subprocess.Popen(  # noqa: S603 - the project's own Procfile
            ["/bin/sh", "-c", f"exec {self.command}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            bufsize=1,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - async-signal-safe enough: one call
        )
        self._reader = threading.Thread(
            target=self._relay, args=(printer,), name=f"relay-{self.name}", daemon=True
        )
        self._reader.start()

    def _relay(self, printer: Printer) -> None:
        assert self._popen is not None and self._popen.stdout is not None
        for raw in self._popen.stdout:
            text = raw.rstrip("\n")
            if self.held:
                with self._pending_lock:
                    self._pending.append((time.monotonic(), text))
            else:
                printer.line(self.label, text)

    def release(self, printer: Printer, *, force: bool, now: float, at_most: float) -> None:
        """Print held output once the others are quiet (`force`) or it waited `at_most`."""
        with self._pending_lock:
            if not self._pending or not (force or now - self._pending[0][0] >= at_most):
                return
            pending, self._pending = self._pending, []
        for _, text in pending:
            printer.line(self.label, text, held=True)

    def terminate(self) -> None:
        self.terminated = True
        self._signal(signal.SIGTERM, group=False)

    def kill(self) -> None:
        self._signal(signal.SIGKILL, group=True)

    def _signal(self, signum: int, *, group: bool) -> None:
        try:
            if group:
                os.killpg(self.pid, signum)
            else:
                os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float) -> None:
        assert self._popen is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout)

    def join_output(self) -> None:
        if self._reader is not None:
            self._reader.join(5.0)
