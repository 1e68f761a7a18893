"""`python -m console.demo.supervisor`: run the Procfile's processes, stop them cleanly.

`make run` used honcho, which on Ctrl-C sends SIGTERM to each process's whole group (so a
Celery worker's pool child dies under its master, which logs "exited with signal 15"), sends
SIGKILL 5 s later whatever a process is doing (a warm shutdown takes longer), and exits 130,
which make reports as "Error 130". This runner keeps honcho's Procfile format and output
(`HH:MM:SS name.1 | line`) and stops differently:

- SIGTERM goes to each process itself, never its group: Celery's master makes its warm
  shutdown (finish the task in hand, stop the pool), uvicorn its graceful one.
- A process gets `--grace` seconds (20 s by default; `make run` passes
  LOCUS_STOP_GRACE_SECONDS) before its group is killed; one that had to be killed is named,
  and the exit status is 1.
- Stopped on request and every process drained: exit 0. One that ends by itself stops the
  others, and its exit status is the runner's.
- Output of the `--last` processes (the sign-in line) is held until the others have been
  quiet for `QUIET_S`, so it is the last line of the start-up, not lost among the banners.

Ctrl-C makes the terminal send SIGINT to its foreground process group, which includes make
when `make run` started this; make then dies of it ("Interrupt") whatever its recipe does.
So, as a job-control shell does for a job, the runner takes the terminal's foreground for a
process group of its own while it runs (tcsetpgrp(3)) and hands it back when it ends.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from honcho.environ import parse_procfile

from console.demo.processes import Printer, Process

QUIET_S = 2.0
# The --last output is printed this long after it came at the latest, quiet or not.
HOLD_AT_MOST_S = 30.0
DEFAULT_GRACE_S = 20.0


class Supervisor:
    """The Procfile's processes, their output on one stream, and their stop."""

    def __init__(
        self,
        commands: dict[str, str],
        *,
        grace_s: float,
        last: set[str],
        quiet_s: float = QUIET_S,
    ) -> None:
        unknown = last - commands.keys()
        if unknown:
            raise SystemExit(f"--last {', '.join(sorted(unknown))}: not in the Procfile")
        self.printer = Printer(width=max(len(f"{n}.1") for n in [*commands, "system"]))
        self.processes = [Process(name, cmd, held=name in last) for name, cmd in commands.items()]
        self.grace_s = grace_s
        self.quiet_s = quiet_s
        self.stop_requested = threading.Event()
        self.stop_signal = ""

    def run(self) -> int:
        for process in self.processes:
            process.start(self.printer)
            self.printer.system(f"{process.label} started (pid={process.pid})")
        while not self.stop_requested.is_set() and all(p.running for p in self.processes):
            self._release_held()
            self.stop_requested.wait(0.1)
        ended = [p for p in self.processes if not p.running]
        if self.stop_requested.is_set():
            self.printer.system(f"{self.stop_signal} received: stopping (grace {self.grace_s:g} s)")
        else:
            first = ended[0]
            self.printer.system(f"{first.label} ended (rc={first.returncode}): stopping all")
        self._release_held(force=True)
        killed = self._stop()
        for process in self.processes:
            process.join_output()
        self._release_held(force=True)
        if killed:
            self.printer.system(
                f"killed after {self.grace_s:g} s without stopping: {', '.join(killed)}"
            )
            return 1
        if self.stop_requested.is_set():
            failed = [p for p in self.processes if not p.stopped_cleanly]
            for p in failed:
                self.printer.system(f"{p.label} stopped with rc={p.returncode}")
            return 1 if failed else 0
        return ended[0].returncode or 1

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        # A signal handler only takes note: it runs between two bytecodes of the main
        # thread, which may hold the printer's lock right then (printing here deadlocked).
        if not self.stop_requested.is_set():
            self.stop_signal = signal.Signals(signum).name
        self.stop_requested.set()

    def _stop(self) -> list[str]:
        """SIGTERM to each process; SIGKILL to the group of any still running after the grace
        time. Each stop is reported as it happens; returns the killed processes' labels."""
        for process in self.processes:
            if process.running:
                self.printer.system(f"sending SIGTERM to {process.label} (pid {process.pid})")
                process.terminate()
        deadline = time.monotonic() + self.grace_s
        waiting = list(self.processes)
        killed: list[str] = []
        while waiting:
            for process in [p for p in waiting if not p.running]:
                self.printer.system(f"{process.label} stopped (rc={process.returncode})")
                waiting.remove(process)
            if waiting and time.monotonic() > deadline and not killed:
                for process in waiting:
                    self.printer.system(f"sending SIGKILL to {process.label} (pid {process.pid})")
                    process.kill()
                    killed.append(process.label)
            time.sleep(0.05)
        return killed

    def _release_held(self, *, force: bool = False) -> None:
        now = time.monotonic()
        quiet = now - self.printer.last_unheld_at >= self.quiet_s
        for process in self.processes:
            process.release(self.printer, force=force or quiet, now=now, at_most=HOLD_AT_MOST_S)


@contextmanager
def terminal_foreground() -> Iterator[None]:
    """This process in a group of its own, in the terminal's foreground while it runs; the
    terminal handed back after. Nothing happens without a controlling terminal, or when the
    caller was not in the foreground (`make run &`)."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR)
    except OSError:
        yield
        return
    try:
        before = os.getpgrp()
        if os.tcgetpgrp(tty) != before:
            yield
            return
        os.setpgid(0, 0)
        # A background group that calls tcsetpgrp gets SIGTTOU, which would stop it.
        previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            os.tcsetpgrp(tty, os.getpgrp())
            yield
        finally:
            os.tcsetpgrp(tty, before)
            signal.signal(signal.SIGTTOU, previous)
    finally:
        os.close(tty)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.demo.supervisor", description=__doc__)
    parser.add_argument("-f", "--procfile", default="Procfile", type=Path)
    parser.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE_S,
        help="seconds each process has to stop after SIGTERM before it is killed",
    )
    parser.add_argument(
        "--last",
        action="append",
        default=[],
        help="a process whose output waits until the others' start-up output is done",
    )
    args = parser.parse_args(argv)
    if args.grace <= 0:
        parser.error(f"--grace {args.grace:g}: must be positive")
    try:
        commands = dict(parse_procfile(args.procfile.read_text()).processes)
    except OSError as exc:
        parser.error(f"--procfile {args.procfile}: {exc.strerror}")
    if not commands:
        parser.error(f"--procfile {args.procfile}: no processes")
    supervisor = Supervisor(commands, grace_s=args.grace, last=set(args.last))
    with terminal_foreground():
        signal.signal(signal.SIGINT, supervisor.request_stop)
        signal.signal(signal.SIGTERM, supervisor.request_stop)
        signal.signal(signal.SIGHUP, supervisor.request_stop)
        return supervisor.run()


if __name__ == "__main__":
    sys.exit(main())
