"""docs/settings.md lists every setting Locus reads from the environment, one row each, with
the default the code uses."""

from __future__ import annotations

import ast
import re
from typing import Any

from tests.conftest import REPO

# The settings package: one module per part of the product (console/settings/__init__.py).
SETTINGS = REPO / "console" / "settings"
REFERENCE = REPO / "docs" / "settings.md"
# The process runner and the container files read a few variables of their own.
RUNNERS = (
    REPO / "Procfile",
    REPO / "Makefile",
    REPO / "docker" / "compose.yaml",
    REPO / "docker" / "entrypoint.sh",
)
ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|", flags=re.MULTILINE)


def _constant(node: ast.expr) -> Any:
    """The value of a default written as a literal or as literal arithmetic (16 * 1024 ** 2);
    `...` for a default computed from other settings."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Pow | ast.Add):
        left, right = _constant(node.left), _constant(node.right)
        if isinstance(left, int | float) and isinstance(right, int | float):
            return eval(compile(ast.Expression(node), "<default>", "eval"))  # literals only
        return ...
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ...


def read_by_settings() -> dict[str, Any]:
    """Every variable console/settings/ reads through django-environ, with its default."""
    found: dict[str, Any] = {}
    nodes = (
        n for path in sorted(SETTINGS.glob("*.py")) for n in ast.walk(ast.parse(path.read_text()))
    )
    for node in nodes:
        if isinstance(node, ast.DictComp):
            # LOCUS_BREAKER_<KEY>: one variable per (key, default) of the comprehension.
            name = next((n for n in ast.walk(node.value) if isinstance(n, ast.JoinedStr)), None)
            if name is not None:
                prefix = name.values[0]
                assert isinstance(prefix, ast.Constant) and isinstance(prefix.value, str)
                for key, default in ast.literal_eval(node.generators[0].iter):
                    found[f"{prefix.value}{key.upper()}"] = default
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "env"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            continue
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        found[node.args[0].value] = _constant(default) if default is not None else ...
    return found


def read_by_runners() -> set[str]:
    return {
        name for path in RUNNERS for name in re.findall(r"\$\{([A-Z][A-Z0-9_]*)", path.read_text())
    }


def documented() -> dict[str, str]:
    rows = ROW.findall(REFERENCE.read_text())
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)), "a setting has two rows"
    return {name: cell.strip() for name, cell in rows}


def _written(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(_written(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _shows(cell: str, default: Any) -> bool:
    """Whether a row's default cell starts with `default`, as a number where it is one."""
    if default in ("", []):
        return cell.startswith("empty")
    shown = re.match(r"`([^`]*)`", cell)
    if shown is None:
        return False
    if isinstance(default, int | float) and not isinstance(default, bool):
        try:
            return float(shown[1]) == float(default)
        except ValueError:
            return False
    return shown[1] == _written(default)


def test_every_setting_has_a_row() -> None:
    read = set(read_by_settings()) | read_by_runners()
    assert len(read) > 100
    missing = sorted(read - set(documented()))
    assert not missing, f"settings missing from docs/settings.md: {missing}"


def test_every_row_is_a_setting_that_is_read() -> None:
    stale = sorted(set(documented()) - set(read_by_settings()) - read_by_runners())
    assert not stale, f"docs/settings.md lists settings nothing reads: {stale}"


def test_defaults_match_the_code() -> None:
    rows = documented()
    wrong = {}
    for name, default in read_by_settings().items():
        if default is ... or default is None:
            continue  # computed from other settings, or unset: the row says so in words
        if not _shows(rows[name], default):
            wrong[name] = (rows[name], default)
    assert not wrong, f"defaults in docs/settings.md differ from console/settings/: {wrong}"
