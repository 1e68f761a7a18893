"""Topology files: YAML read with duplicate keys refused, validated into a `Topology`, every
problem reported with the file, the entry and its line; and a `Topology` written back."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from optimizer.errors import InputFileError
from optimizer.topology import Topology


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error: the
    safe loader keeps the last silently, so a second `nodes:` would drop the first list."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _line_of(node: yaml.Node | None, loc: Sequence[str | int]) -> int | None:
    """The 1-based line of the YAML node at a pydantic error location, if it can be found."""
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            node = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            break
        if node is None:
            return None
    return None if node is None else node.start_mark.line + 1


def _describe(error: dict[str, Any], raw: dict[str, Any]) -> tuple[str, tuple[str | int, ...]]:
    loc = tuple(error["loc"])
    if error["type"] == "value_error" and not loc:
        return str(error["ctx"]["error"]), loc
    parts: list[str] = []
    entry_done = False
    for i, part in enumerate(loc):
        if isinstance(part, int) and not entry_done and parts:
            section = loc[i - 1] if i else ""
            entry = raw.get(section, [None] * (part + 1)) if isinstance(section, str) else None
            item = entry[part] if isinstance(entry, list) and part < len(entry) else None
            name = item.get("name") if isinstance(item, dict) else None
            parts[-1] = f"{section}[{part}]" + (f" ({name})" if name else "")
            entry_done = True
        else:
            parts.append(str(part))
    where = parts[0] if parts else "file"
    field = ".".join(parts[1:])
    message = error["msg"]
    if error["type"] == "missing":
        message = "required field is missing"
    elif error["type"] == "extra_forbidden":
        message = "unknown field"
    return (f"{where}: field '{field}': {message}" if field else f"{where}: {message}"), loc


def parse_topology(text: str, path: str = "<topology>") -> Topology:
    """Parse topology YAML text; raise InputFileError listing every problem."""
    try:
        tree = yaml.compose(text, Loader=_UniqueKeyLoader)
        raw = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "file"
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputFileError(path, [f"{path}: {where}: malformed YAML: {problem}"]) from exc
    if not isinstance(raw, dict):
        raise InputFileError(path, [f"{path}: the file must be a YAML mapping with version: 1"])
    try:
        return Topology.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            message, loc = _describe(dict(error), raw)
            if not loc and error["type"] == "value_error":
                problems += [
                    f"{path}: {line}" for line in message.removeprefix("Value error, ").splitlines()
                ]
                continue
            line = _line_of(tree, loc)
            problems.append(f"{path}:{line}: {message}" if line else f"{path}: {message}")
        raise InputFileError(path, problems) from exc


def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputFileError(str(p), [f"{p}: cannot read file: {exc.strerror}"]) from exc
    except UnicodeDecodeError as exc:
        raise InputFileError(str(p), [f"{p}: not UTF-8 text ({exc.reason})"]) from exc
    return parse_topology(text, str(p))


def dump_topology(topology: Topology) -> str:
    """The YAML text of a topology, in the file order of docs/contracts.md §1."""
    return yaml.safe_dump(topology.to_dict(), sort_keys=False, default_flow_style=None, width=100)
