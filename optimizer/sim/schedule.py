"""Operational events injected into a simulation: drains, cordons, failures and recoveries.

A schedule file (YAML or JSON) is a list of events, or a mapping with an `events` list:

    events:
      - {at_s: 600, node: fra-h100-1, action: drain}
      - {at_s: 900, node: muc-l4-1, action: fail}
      - {at_s: 1500, node: muc-l4-1, action: recover}

`at_s` is simulated seconds from the first arrival (not scaled by `--load`). `drain` and
`cordon` stop new placements while queued and running work finishes; `fail` takes the node
down at once, losing its running sequences and its cache and re-placing its queued requests;
`recover` makes it active again, empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from optimizer.errors import InputFileError
from optimizer.topology import Topology

ACTIONS: tuple[str, ...] = ("drain", "cordon", "fail", "recover")


@dataclass(frozen=True, slots=True)
class ScheduledEvent:
    """One operational event: at `at_s` simulated seconds, apply `action` to `node`."""

    at_s: float
    node: str
    action: str


def _event(raw: Any, where: str, topology: Topology) -> ScheduledEvent:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping with at_s, node and action")
    unknown = set(raw) - {"at_s", "node", "action"}
    if unknown:
        raise ValueError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    for field in ("at_s", "node", "action"):
        if field not in raw:
            raise ValueError(f"{where}: field '{field}': required field is missing")
    at_s = raw["at_s"]
    if isinstance(at_s, bool) or not isinstance(at_s, int | float) or at_s < 0:
        raise ValueError(f"{where}: field 'at_s': expected seconds >= 0, got {at_s!r}")
    if raw["node"] not in topology.node_by_name:
        raise ValueError(f"{where}: field 'node': unknown node {raw['node']!r}")
    if raw["action"] not in ACTIONS:
        raise ValueError(
            f"{where}: field 'action': {raw['action']!r} is not one of {', '.join(ACTIONS)}"
        )
    return ScheduledEvent(float(at_s), str(raw["node"]), str(raw["action"]))


def parse_schedule(text: str, topology: Topology, path: str = "<events>") -> list[ScheduledEvent]:
    """Parse schedule text, checking node names against `topology`; events sorted by time."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputFileError(path, [f"{path}: malformed YAML/JSON: {exc}"]) from exc
    if isinstance(raw, dict):
        raw = raw.get("events")
    if not isinstance(raw, list):
        raise InputFileError(path, [f"{path}: expected a list of events (or events: [...])"])
    try:
        events = [_event(item, f"{path}: events[{i}]", topology) for i, item in enumerate(raw)]
    except ValueError as exc:
        raise InputFileError(path, [str(exc)]) from exc
    return sorted(events, key=lambda e: e.at_s)


def load_schedule(path: str | Path, topology: Topology) -> list[ScheduledEvent]:
    """Read a schedule file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputFileError(str(p), [f"{p}: cannot read file: {exc.strerror}"]) from exc
    return parse_schedule(text, topology, str(p))
