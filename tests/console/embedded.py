"""A console on its own embedded defaults in a directory, for tests that start real
processes (workers, manage.py) against it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CONTRACT_EXAMPLE, REPO


def embedded_console(directory: Path) -> dict[str, str]:
    """The environment of a console on its embedded defaults (SQLite file, filesystem
    broker) in `directory`, migrated and holding the contract example's fleet."""
    env = {
        **os.environ,
        "LOCUS_VAR_DIR": str(directory),
        "DATABASE_URL": f"sqlite:///{directory / 'locus.sqlite3'}",
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "filesystem://",
        "LOCUS_TELEMETRY_STATE_URL": f"sqlite:///{directory / 'state.sqlite3'}",
        "LOCUS_ENGINE_BACKGROUND": "false",
        "SECRET_KEY": "test-only",
        "CELERY_TASK_ALWAYS_EAGER": "false",
    }
    for command in (["migrate", "-v0"], ["load_topology", str(CONTRACT_EXAMPLE)]):
        subprocess.run(  # noqa: S603 - our own manage.py
            [sys.executable, "manage.py", *command], cwd=REPO, env=env, check=True
        )
    return env


def manage_shell(env: dict[str, str], code: str) -> str:
    """What `manage.py shell -c code` prints, in the console of `env`."""
    done = subprocess.run(  # noqa: S603 - our own manage.py
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout
