"""The split stage: prefill and decode pairs, their constraints, fallbacks and explanation."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.decide.pipeline import Choice, Pipeline
from optimizer.decide.registry import get_filter, get_policy, get_splitter
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.fleet import D_QUEUE, D_RUNNING, DYNAMIC_COLUMNS, Fleet
from optimizer.topology import Topology
from tests.optimizer.fleets import pd_topology, request, tiny_topology

LONG = 10_000  # tokens: 5 s of prefill on the edge's small mixed node, 1 s on a big one


def _decide(
    topology: Topology,
    req: PlacementRequest,
    splitter: str | None = "pd-threshold",
    dynamic: np.ndarray | None = None,
    k: int = 3,
) -> tuple[Choice, Fleet]:
    fleet = Fleet(topology)
    state = dynamic if dynamic is not None else np.zeros((fleet.size, DYNAMIC_COLUMNS))
    pipeline = Pipeline(
        [get_filter("constraints")],
        splitter=get_splitter(splitter) if splitter is not None else None,
    )
    choice = pipeline.decide(fleet, req, state, None, get_policy("weighted-score", topology), k)
    return choice, fleet


def _names(choice: Choice, fleet: Fleet) -> list[tuple[str, str | None]]:
    return [
        (fleet.names[p.decode], None if p.prefill is None else fleet.names[p.prefill])
        for p in choice.pairs
    ]


def test_one_node_answers_come_from_mixed_nodes_and_say_why_the_others_cannot() -> None:
    topology = pd_topology()
    choice, fleet = _decide(topology, request(topology, prompt=100), splitter=None)
    assert _names(choice, fleet) == [("edge-m", None)]
    rejected = choice.trip.rejected()
    assert rejected["core-p"] == rejected["cloud-p"] == "prefill_only"
    assert rejected["core-d"] == rejected["edge-d"] == "decode_only"


def test_a_long_prompt_is_prefilled_in_the_core_and_the_explanation_prices_the_transfer() -> None:
    topology = pd_topology()
    choice, fleet = _decide(topology, request(topology, prompt=LONG))
    assert choice.split and choice.node is not None and choice.prefill_node is not None
    assert (fleet.names[choice.node], fleet.names[choice.prefill_node]) == ("core-d", "core-p")
    split = choice.pairs[0].split
    assert split is not None
    assert split.kv_bytes == LONG * 1000
    # Both in b-core: the intra-site RTT and the fabric's 200 Gb/s.
    assert split.transfer_s == pytest.approx(0.0005 + LONG * 1000 * 8 / 200e9)
    assert split.ttft_mixed_s is not None and split.ttft_split_s < split.ttft_mixed_s
    explained = split.explain()
    assert explained["kv_bytes"] == LONG * 1000
    assert explained["estimated_ttft_split_ms"] < explained["estimated_ttft_mixed_ms"]


def test_a_short_prompt_stays_on_one_node() -> None:
    topology = pd_topology()
    choice, fleet = _decide(topology, request(topology, prompt=1000))
    assert not choice.split and choice.prefill_node is None
    assert _names(choice, fleet)[0] == ("edge-m", None)


def test_a_split_is_not_kept_when_one_node_is_faster() -> None:
    # The mixed node is big and idle: nothing beats prefilling and decoding there.
    nodes = [
        {"name": "core-m", "site": "b-core", "accelerator": "big", "usd_per_hour": 1.0,
         "models": ["m1"]},
        {"name": "core-p", "site": "b-core", "accelerator": "big", "usd_per_hour": 1.0,
         "models": ["m1"], "role": "prefill"},
        {"name": "core-d", "site": "b-core", "accelerator": "big", "usd_per_hour": 1.0,
         "models": ["m1"], "role": "decode"},
    ]  # fmt: skip
    topology = tiny_topology(nodes=nodes)
    choice, fleet = _decide(topology, request(topology, prompt=LONG))
    assert not choice.split
    assert _names(choice, fleet) == [("core-m", None)]


def test_fallbacks_are_pairs_then_one_node_answers() -> None:
    topology = pd_topology()
    choice, fleet = _decide(topology, request(topology, prompt=LONG, slo=None), k=4)
    pairs = _names(choice, fleet)
    assert pairs[0] == ("core-d", "core-p")
    assert all(p is not None for _, p in pairs[:2]) and len(pairs) == 4
    assert pairs[-1] == ("edge-m", None)
    # The second pair uses the other prefill node (cloud-p), so one node's failure leaves one.
    assert pairs[1][1] == "cloud-p"
    assert choice.prefill == [q.prefill for q in choice.pairs]


def test_residency_holds_for_both_nodes() -> None:
    topology = pd_topology()
    choice, fleet = _decide(topology, request(topology, prompt=LONG, slo="eu-only"), k=5)
    used = {n for pair in _names(choice, fleet) for n in pair if n is not None}
    assert "cloud-p" not in used  # the US cloud's prefill node
    assert choice.trip.rejected()["cloud-p"] == "residency"


def test_the_model_must_be_served_by_both_nodes() -> None:
    base = pd_topology()
    other = {"name": "m2", "memory_gib": 16, "kv_bytes_per_token": 1000}
    profiles = [
        *[p.model_dump() for p in base.profiles],
        *[{**p.model_dump(), "model": "m2"} for p in base.profiles],
    ]
    nodes = [
        {**n.model_dump(exclude_defaults=True), "models": ["m2"]}
        if n.name == "core-p"
        else n.model_dump(exclude_defaults=True)
        for n in base.nodes
    ]
    topology = tiny_topology(nodes=nodes, models=[*[m.model_dump() for m in base.models], other],
                             profiles=profiles)  # fmt: skip
    choice, fleet = _decide(topology, request(topology, prompt=LONG, slo=None), k=5)
    prefills = {p for _, p in _names(choice, fleet) if p is not None}
    assert "cloud-p" in prefills and "core-p" not in prefills
    assert choice.trip.rejected()["core-p"] == "model_not_served"


def test_only_the_bandwidth_aware_stage_avoids_a_slow_link() -> None:
    # 1 MB of KV a token: 10 GB cross a_edge-b_core's 1 Gbit/s link in 80 s, the core's
    # fabric in 0.4 s. With the core's decode node busy, ignoring bandwidth sends the KV
    # to the edge.
    topology = pd_topology(keep_nodes=("core-p", "core-d", "edge-d", "edge-m"),
                           kv_bytes_per_token=100_000)  # fmt: skip
    fleet = Fleet(topology)
    dynamic = np.zeros((fleet.size, DYNAMIC_COLUMNS))
    dynamic[fleet.index_of["core-d"], D_RUNNING] = 3
    dynamic[fleet.index_of["edge-m"], D_QUEUE] = 3
    req = request(topology, prompt=LONG, output=2, slo=None)
    aware, _ = _decide(topology, req, "pd-threshold", dynamic)
    blind, _ = _decide(topology, req, "pd-threshold-blind", dynamic)
    assert aware.node is not None and blind.node is not None
    assert fleet.names[aware.node] == "core-d"
    assert fleet.names[blind.node] == "edge-d"


def test_a_fleet_of_mixed_nodes_without_a_split_stage_answers_as_before() -> None:
    topology = tiny_topology()
    choice, fleet = _decide(topology, request(topology, prompt=LONG), splitter=None, k=2)
    index = choice.candidates.index
    assert [p.decode for p in choice.pairs] == [int(index[j]) for j in choice.order]
    assert choice.prefill == [None, None] and not choice.split


def test_an_unknown_split_stage_is_named_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match="pd-threshold"):
        get_splitter("nope")
    with pytest.raises(ValueError, match="threshold"):
        get_splitter("pd-threshold", threshold_tokens=-1)
