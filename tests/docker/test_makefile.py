"""The Makefile's secrets: `make .env` writes the local SECRET_KEY readable by its owner only."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_writes_the_env_file_with_mode_0600(tmp_path: Path) -> None:
    subprocess.run(
        ["make", "-f", str(REPO / "Makefile"), "-C", str(tmp_path), ".env", f"PY={sys.executable}"],
        check=True,
        capture_output=True,
    )
    env = tmp_path / ".env"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert env.read_text().startswith("SECRET_KEY=")
