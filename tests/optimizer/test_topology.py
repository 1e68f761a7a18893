"""Topology validation (docs/contracts.md §1): every problem names the file, the entry and the
field."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from optimizer.errors import InputFileError
from optimizer.topology_files import load_topology, parse_topology
from tests.optimizer.fleets import FLEET_DEMO, REPO, TINY


def _problems(data: object) -> str:
    with pytest.raises(InputFileError) as info:
        parse_topology(yaml.safe_dump(data), "bad.yaml")
    return str(info.value)


def test_unknown_reference_names_entry_and_missing_name() -> None:
    data = copy.deepcopy(TINY)
    data["nodes"][0]["site"] = "atlantis"
    message = _problems(data)
    assert "nodes[0] (edge-s)" in message and "'site'" in message and "'atlantis'" in message


def test_duplicate_name_is_reported() -> None:
    data = copy.deepcopy(TINY)
    data["nodes"][1]["name"] = "edge-s"
    assert "duplicate name 'edge-s'" in _problems(data)


def test_negative_rtt_is_reported() -> None:
    data = copy.deepcopy(TINY)
    data["links"][0]["rtt_ms"] = -3
    message = _problems(data)
    assert "links[0]" in message and "rtt_ms" in message


def test_missing_field_is_reported() -> None:
    data = copy.deepcopy(TINY)
    del data["nodes"][2]["accelerator"]
    message = _problems(data)
    assert "nodes[2] (cloud-l)" in message and "accelerator" in message and "missing" in message


def test_malformed_yaml_names_the_line() -> None:
    with pytest.raises(InputFileError, match=r"bad.yaml: line \d+: malformed YAML"):
        parse_topology("version: 1\nsites: [\n  - {name: x", "bad.yaml")


def test_models_that_do_not_fit_are_an_error() -> None:
    data = copy.deepcopy(TINY)
    data["models"][0]["memory_gib"] = 30
    assert "need 30 GiB but the node has 24 GiB" in _problems(data)


def test_shipped_topologies_load() -> None:
    for path in (REPO / "optimizer" / "topologies").glob("*.yaml"):
        load_topology(path)


def test_fleet_demo_spans_tiers_jurisdictions_and_models() -> None:
    topo = load_topology(FLEET_DEMO)
    assert len(topo.nodes) >= 20
    assert {s.tier for s in topo.sites} == {"device", "edge", "regional", "cloud"}
    assert len({s.jurisdiction for s in topo.sites}) >= 2
    assert len(topo.models) >= 3
    big = {n.name for n in topo.nodes if "llama-3.1-70b" in n.models}
    assert big and all(topo.kv_capacity_bytes(topo.node_by_name[n]) > 0 for n in big)


def test_routes_are_symmetric_and_missing_pairs_unreachable() -> None:
    topo = load_topology(FLEET_DEMO)
    assert topo.routes[("muc-edge", "fra-core")] == topo.routes[("fra-core", "muc-edge")]
    assert ("muc-device", "use-cloud") not in topo.routes
    assert topo.rtt_ms("muc-device", "use-cloud") is None


def test_a_key_given_twice_is_an_error_naming_its_line() -> None:
    text = yaml.safe_dump(TINY, sort_keys=False) + "nodes: []\n"
    last_line = text.count("\n")
    with pytest.raises(
        InputFileError, match=rf"bad.yaml: line {last_line}: .*duplicate key 'nodes'"
    ):
        parse_topology(text, "bad.yaml")


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_infinite_or_nan_numbers_are_refused(value: float) -> None:
    data = copy.deepcopy(TINY)
    data["nodes"][0]["usd_per_hour"] = value
    message = _problems(data)
    assert "nodes[0] (edge-s)" in message and "usd_per_hour" in message


def test_a_non_string_top_level_key_is_reported_not_a_crash() -> None:
    data = {**copy.deepcopy(TINY), 1: "x"}
    assert "bad.yaml" in _problems(data)


def test_a_topology_that_is_not_text_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(b"version: 1\n\xff\xfe")
    with pytest.raises(InputFileError, match=r"t.yaml: not UTF-8 text"):
        load_topology(path)


@pytest.mark.parametrize(
    ("given", "canonical"),
    [("10.0.0.7:8000", "10.0.0.7:8000"), ("[fd00::0:7]:08000", "[fd00::7]:8000")],
)
def test_it_keeps_a_node_address_in_canonical_form(given: str, canonical: str) -> None:
    data = copy.deepcopy(TINY)
    data["nodes"][0]["address"] = given
    topology = parse_topology(yaml.safe_dump(data), "ok.yaml")
    assert topology.nodes[0].address == canonical
    assert topology.to_dict()["nodes"][0]["address"] == canonical
    assert "address" not in topology.to_dict()["nodes"][1]


@pytest.mark.parametrize(
    "bad", ["pod-1:8000", "10.0.0.7", "10.0.0.7:0", "10.0.0.7:70000", "fd00::7:8000", ""]
)
def test_it_rejects_an_address_that_is_not_ip_and_port(bad: str) -> None:
    data = copy.deepcopy(TINY)
    data["nodes"][0]["address"] = bad
    message = _problems(data)
    assert "nodes[0] (edge-s)" in message and "address" in message


def test_it_rejects_two_nodes_at_one_address() -> None:
    data = copy.deepcopy(TINY)
    data["nodes"][0]["address"] = "10.0.0.7:8000"
    data["nodes"][2]["address"] = "10.0.0.7:8000"
    message = _problems(data)
    assert "nodes[2] (cloud-l): field 'address': duplicate address '10.0.0.7:8000'" in message
    assert "(first at nodes[0])" in message
