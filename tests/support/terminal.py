"""A command run on a pseudo-terminal, as a user runs it in a shell: Ctrl-C is the byte 0x03
written to the terminal, which then signals its foreground process group (termios(3),
ISIG), exactly as a keyboard's Ctrl-C does."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import subprocess
import termios
import time
from pathlib import Path

CTRL_C = b"\x03"


def spawn_on_a_terminal(
    argv: list[str], *, cwd: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """`argv` as a session leader with a new pseudo-terminal as its controlling terminal,
    in its foreground, as a shell starts a command a user types."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # noqa: PLW1509
    )  # fmt: skip
    os.close(slave)
    return process, master


def read_terminal(master: int, until: str, timeout: float) -> str:
    """What the terminal shows, read until `until` appears (or `timeout` passed, or the
    terminal closed)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while until.encode() not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every process of the terminal has closed it
                break
            if not chunk:
                break
            seen += chunk
    return seen.decode(errors="replace").replace("\r\n", "\n")
