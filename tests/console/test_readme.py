"""The README documents every setting the console reads from the environment."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_every_environment_variable_is_documented() -> None:
    settings = (REPO / "console" / "settings.py").read_text()
    names = set(re.findall(r'env\.\w+\(\s*"([A-Z_]+)"', settings))
    assert len(names) > 40
    readme = (REPO / "README.md").read_text()
    missing = sorted(
        n
        for n in names
        if f"`{n}`" not in readme
        and not (n.startswith("LOCUS_BREAKER_") and "LOCUS_BREAKER_" in readme)
    )
    assert not missing, f"settings missing from README: {missing}"
