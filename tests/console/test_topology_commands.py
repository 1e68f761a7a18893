"""load_topology / dump_topology (docs/contracts.md §1) through the management commands."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from console.inventory.models import Link, Node, Site, Source
from console.inventory.selectors import inventory_topology
from optimizer.topology_files import parse_topology
from tests.conftest import CONTRACT_EXAMPLE, TOPOLOGIES

pytestmark = pytest.mark.django_db


def _load(path: Path | str) -> str:
    out = io.StringIO()
    call_command("load_topology", str(path), stdout=out)
    return out.getvalue()


def _dump() -> str:
    out = io.StringIO()
    call_command("dump_topology", stdout=out)
    return out.getvalue()


def _snapshot() -> str:
    return _dump()


def _canonical(text: str) -> dict:
    """A topology as plain data with every list in a stable order (pairs unordered)."""
    data = parse_topology(text).to_dict()
    for key in ("sites", "accelerators", "models", "nodes", "sources", "slos"):
        data.get(key, []).sort(key=lambda e: e["name"])
    if "workload" in data:
        data["workload"]["models"].sort(key=lambda e: e["name"])
    for node in data["nodes"]:
        node["models"] = sorted(node["models"])
    data["links"] = sorted(
        (
            tuple(sorted((lk["a"], lk["b"]))),
            lk["rtt_ms"],
            lk["bandwidth_gbps"],
            lk["egress_usd_per_gb"],
        )
        for lk in data.get("links", [])
    )
    data["profiles"] = sorted(data["profiles"], key=lambda p: (p["model"], p["accelerator"]))
    return data


def test_it_loads_the_contract_example() -> None:
    out = _load(CONTRACT_EXAMPLE)
    assert "inventory updated" in out
    assert Site.objects.count() == 3
    assert Link.objects.count() == 3
    node = Node.objects.get(name="fra-h100-1")
    assert node.site.name == "fra-core"
    assert [m.name for m in node.served_models.all()] == ["llama-3.1-8b"]
    assert Source.objects.get(name="munich-app").slo.name == "interactive"


def test_loading_twice_changes_nothing() -> None:
    _load(CONTRACT_EXAMPLE)
    before = _snapshot()
    ids = sorted(Node.objects.values_list("pk", flat=True))
    out = _load(CONTRACT_EXAMPLE)
    assert "inventory unchanged" in out
    assert _snapshot() == before
    assert sorted(Node.objects.values_list("pk", flat=True)) == ids


def test_dump_loads_back_to_the_same_inventory(tmp_path: Path) -> None:
    _load(CONTRACT_EXAMPLE)
    dumped = _dump()
    assert _canonical(dumped) == _canonical(CONTRACT_EXAMPLE.read_text())
    path = tmp_path / "dumped.yaml"
    path.write_text(dumped)
    assert "inventory unchanged" in _load(path)


@pytest.mark.parametrize("name", sorted(p.name for p in TOPOLOGIES.glob("*.yaml")))
def test_every_shipped_topology_round_trips(name: str, tmp_path: Path) -> None:
    original = (TOPOLOGIES / name).read_text()
    _load(TOPOLOGIES / name)
    assert _canonical(_dump()) == _canonical(original)


def test_an_edited_file_updates_in_place(tmp_path: Path) -> None:
    _load(CONTRACT_EXAMPLE)
    pk = Node.objects.get(name="muc-l4-1").pk
    edited = CONTRACT_EXAMPLE.read_text().replace("usd_per_hour: 0.8", "usd_per_hour: 0.95")
    edited = edited.replace("rtt_ms: 9,", "rtt_ms: 7,")
    path = tmp_path / "edited.yaml"
    path.write_text(edited)
    assert "updated" in _load(path)
    node = Node.objects.get(name="muc-l4-1")
    assert node.pk == pk and node.usd_per_hour == 0.95
    assert inventory_topology().rtt_ms("muc-edge", "fra-core") == 7


def test_reloading_keeps_a_drained_node_drained() -> None:
    _load(CONTRACT_EXAMPLE)
    Node.objects.filter(name="muc-l4-1").update(state="draining")
    _load(CONTRACT_EXAMPLE)
    assert Node.objects.get(name="muc-l4-1").state == "draining"


BROKEN = {
    "unknown reference": (
        ("site: fra-core, accelerator: h100", "site: nowhere, accelerator: h100"),
        ["nodes[1] (fra-h100-1)", "site", "unknown site 'nowhere'"],
    ),
    "duplicate name": (
        (
            "{name: l4, memory_gib: 24}",
            "{name: l4, memory_gib: 24}\n  - {name: l4, memory_gib: 48}",
        ),
        ["accelerators[1] (l4)", "duplicate name 'l4'"],
    ),
    "negative rtt": (
        ("rtt_ms: 9,", "rtt_ms: -9,"),
        ["links[0]", "rtt_ms", "greater than or equal to 0"],
    ),
    "missing field": (
        ("{name: h100, memory_gib: 80}", "{name: h100}"),
        ["accelerators[1] (h100)", "memory_gib", "required field is missing"],
    ),
    "malformed yaml": (
        ("models:\n", "models: [\n"),
        ["malformed YAML"],
    ),
    "self link": (
        ("{a: muc-edge, b: fra-core,", "{a: muc-edge, b: muc-edge,"),
        ["links[0]", "joins site 'muc-edge' to itself"],
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_file_names_the_problem_and_imports_nothing(case: str, tmp_path: Path) -> None:
    _load(CONTRACT_EXAMPLE)
    Node.objects.filter(name="muc-l4-1").update(usd_per_hour=1.23)  # a change a bad load must keep
    before = _snapshot()
    (old, new), expected = BROKEN[case]
    text = CONTRACT_EXAMPLE.read_text()
    assert old in text
    path = tmp_path / "broken.yaml"
    path.write_text(text.replace(old, new, 1).replace("usd_per_hour: 2.9", "usd_per_hour: 9.9"))
    with pytest.raises(CommandError) as excinfo:
        _load(path)
    message = str(excinfo.value)
    assert str(path) in message
    for fragment in expected:
        assert fragment in message, message
    assert _snapshot() == before


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="cannot read file"):
        _load(tmp_path / "nope.yaml")
