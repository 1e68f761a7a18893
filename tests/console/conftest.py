from __future__ import annotations

from pathlib import Path

import pytest

from tests.console.embedded import embedded_console


@pytest.fixture
def embedded(tmp_path: Path) -> dict[str, str]:
    """A console on its own embedded defaults in tmp_path (`embedded.embedded_console`)."""
    return embedded_console(tmp_path)
