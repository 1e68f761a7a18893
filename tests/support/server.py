"""A real console process for tests: management commands and uvicorn in subprocesses, on the
embedded defaults (a SQLite file in a temporary directory) unless the caller's env says
otherwise."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from tests.conftest import REPO


def embedded_env(var_dir: Path, **extra: str) -> dict[str, str]:
    """Production settings on a private SQLite file, broker and state under `var_dir`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")
    }
    return {
        **env,
        "SECRET_KEY": "server-test",
        "DEBUG": "false",
        "LOCUS_VAR_DIR": str(var_dir),
        "DATABASE_URL": f"sqlite:///{var_dir / 'locus.sqlite3'}",
        **extra,
    }


def manage(env: dict[str, str], *args: str) -> str:
    """Run `manage.py ARGS`; its standard output."""
    done = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), *args],
        env=env,
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_uvicorn(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """uvicorn serving the console as the Procfile runs it (lifespan on auto); waits for
    /healthz."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "console.asgi:application",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        env=env,
        cwd=REPO,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{url}/healthz", timeout=3).ok:
                return process, url
        except requests.RequestException:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the server did not start")


def wait_for(condition: object, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False
