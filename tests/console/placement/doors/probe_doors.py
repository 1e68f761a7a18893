"""A running exploration probe for the doors' tests (docs/twin.md, "Exploration probe"): the
probe fleet (tests/console/twin/probe_fleet.py) in the inventory with an address per node,
a probe of its A10s proposed, approved and started through the API as an admin would, and
sessions the probe takes or leaves (its sticky share, computed as the engine does)."""

from __future__ import annotations

import re
from typing import Any, cast

import yaml

from console.placement.engine.runtime import Runtime, runtime
from optimizer.decide.pickers.probe import in_probe
from optimizer.topology_files import parse_topology
from tests.console.twin.probe_fleet import PROBE_FLEET, SHORT

PROBE_HEADER = "x-locus-probe"
# SHORT as an OpenAI completion for the router and the picker: 4 code points make a token
# (optimizer/prompts.py).
SHORT_COMPLETION: dict[str, Any] = {
    "model": SHORT["model"],
    "prompt": "x" * (4 * cast(int, SHORT["prompt_tokens"])),
    "max_tokens": SHORT["max_output_tokens"],
}
# The probe's node for Munich's short interactive requests (the US A10 breaks residency).
PROBE_NODE = "fra-a10-1"
POLICY_NODES = {"fra-h100-1", "fra-h100-2"}


def install_probe_fleet(addresses: dict[str, str] | None = None) -> Runtime:
    """The probe fleet in the inventory, each node at `addresses[name]` when given; the
    engine refreshed on it."""
    from console.inventory.services import topology_import

    data = yaml.safe_load(PROBE_FLEET)
    if addresses is not None:
        for node in data["nodes"]:
            node["address"] = addresses[node["name"]]
    topology_import(topology=parse_topology(yaml.safe_dump(data)))
    rt = runtime()
    rt.refresh()
    return rt


def start_probe(client_for: Any) -> int:
    """A probe of both A10s at a 5% share, proposed by one admin, approved by another and
    started by the first (the start refreshes this process's engine: it carries the probe)."""
    proposer, approver = client_for("admin"), client_for("admin")
    body = {"nodes": ["fra-a10-1", "use-a10-1"], "share": 0.05, "max_requests": 1000}
    created = proposer.post("/api/v1/probes", {"reason": "see the A10s", **body}, format="json")
    assert created.status_code == 201, created.content
    pk = int(created.json()["id"])
    for client, step in ((approver, "approve"), (proposer, "start")):
        done = client.post(f"/api/v1/probes/{pk}/{step}", {"reason": "test"}, format="json")
        assert done.status_code == 200, done.content
    snap = runtime().engine.snapshot
    assert snap is not None and snap.probe is not None and snap.probe.probe_id == pk
    return pk


def sessions(*, probed: bool, count: int = 3) -> list[str]:
    """`count` session ids the running probe takes (`probed`) or leaves to the policy."""
    snap = runtime().engine.snapshot
    assert snap is not None and snap.probe is not None
    found = [
        key for key in (f"session-{i}" for i in range(2000)) if in_probe(snap.probe, key) == probed
    ]
    assert len(found) >= count
    return found[:count]


_MEMBER = re.compile(r'\s*([a-z*][a-z0-9_.*-]*)=("(?:[^"\\]|\\.)*"|-?[0-9.]+)\s*(?:,|$)')


def parse_probe_header(value: str) -> dict[str, Any]:
    """An RFC 9651 Dictionary of Strings, Integers and Decimals (what `x-locus-probe`
    holds for the probe fleet's ASCII names), parsed the way a structured-field parser
    reads it; anything else fails the test."""
    members: dict[str, Any] = {}
    position = 0
    while position < len(value):
        match = _MEMBER.match(value, position)
        assert match is not None, f"not a structured-field dictionary at {value[position:]!r}"
        key, raw = match.groups()
        if raw.startswith('"'):
            members[key] = re.sub(r"\\(.)", r"\1", raw[1:-1])
        else:
            members[key] = float(raw) if "." in raw else int(raw)
        position = match.end()
    return members
