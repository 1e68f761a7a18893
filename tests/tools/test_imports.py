"""Every tool under tools/ imports and is described in tools/README.md: tools run by hand, so
nothing else would notice a change of the code they call breaking one."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import tools
from tests.conftest import REPO

MODULES = sorted(info.name for info in pkgutil.walk_packages(tools.__path__, prefix="tools."))
TOP_LEVEL = {info.name for info in pkgutil.iter_modules(tools.__path__)}


def test_the_readme_describes_every_tool_and_only_those() -> None:
    readme = (REPO / "tools" / "README.md").read_text()
    described = set(re.findall(r"^\| `(\w+)` \|", readme, flags=re.MULTILINE))
    assert described == TOP_LEVEL


@pytest.mark.parametrize("name", MODULES)
def test_it_imports(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__, f"{name} says what it is for in its docstring"
