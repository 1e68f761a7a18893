"""Each policy behaves as its definition says, on small hand-built fleets."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.constraints import filter_candidates
from optimizer.decide.registry import POLICY_NAMES, get_policy, load_policy
from optimizer.decide.scorers.base import ordered
from optimizer.decision import NodeView, node_view
from optimizer.errors import InputFileError
from optimizer.sim import ScheduledEvent, simulate
from optimizer.sim.requests import SERVED
from optimizer.topology import Topology
from tests.optimizer.fleets import request, tiny_topology


def _views(topo: Topology, **state: dict[str, int]) -> list[NodeView]:
    return [node_view(topo, n.name, "m1", **state.get(n.name, {})) for n in topo.nodes]


def _pick(name: str, topo: Topology, views: list[NodeView], **kw: object) -> str:
    req = request(topo, **kw)  # type: ignore[arg-type]
    candidates, _ = filter_candidates(req, views, topo)
    return candidates[int(np.argmax(get_policy(name, topo).scores(req, candidates, topo)))].name


def test_every_contract_policy_is_registered() -> None:
    assert set(POLICY_NAMES) >= {
        "random",
        "round-robin",
        "least-loaded",
        "latency-first",
        "cost-first",
        "data-gravity",
        "weighted-score",
        "prefix-aware",
        "kv-aware",
    }


def test_prefix_aware_picks_node_holding_prefix() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    views = _views(topo, **{"cloud-l": {"prefix_blocks": 4}})
    assert _pick("prefix-aware", topo, views, hashes=(1, 2, 3, 4)) == "cloud-l"


def test_prefix_aware_finds_prefix_in_simulation() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    warm = request(topo, prompt=2048, output=1, hashes=(7, 8, 9, 10))
    reqs = [
        warm,
        request(topo, prompt=100, output=1, hashes=(99,)),
        request(topo, prompt=2048, output=1, hashes=(7, 8, 9, 10)),
    ]
    result = simulate(topo, get_policy("prefix-aware", topo), reqs, [0.0, 1.0, 2.0])
    assert result.table.node[2] == result.table.node[0]
    assert result.table.cached[2] == 2048


def test_prefix_aware_weights_are_llm_d_defaults() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    views = _views(topo, **{"core-l": {"queue_depth": 4}, "cloud-l": {"prefix_blocks": 2}})
    req = request(topo, hashes=(1, 2, 3, 4))
    scores = get_policy("prefix-aware", topo).scores(req, views, topo)
    # core-l: queue 0/1 x2 + KV 1 x2 + prefix 0 = 2; cloud-l: 2 + 2 + 3 x 0.5 = 5.5
    assert scores == pytest.approx([2.0, 5.5])


def test_kv_aware_prefers_fewer_uncached_plus_decode_blocks() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    busy = 512 * 1000 * 10  # ten 512-token blocks of KV in use
    views = _views(topo, **{"core-l": {"kv_used_bytes": busy}, "cloud-l": {"prefix_blocks": 1}})
    assert _pick("kv-aware", topo, views, prompt=1024, hashes=(1, 2)) == "cloud-l"
    views = _views(topo, **{"cloud-l": {"kv_used_bytes": busy, "prefix_blocks": 1}})
    assert _pick("kv-aware", topo, views, prompt=1024, hashes=(1, 2)) == "core-l"


def test_cost_first_takes_the_cheap_tier() -> None:
    topo = tiny_topology()
    assert _pick("cost-first", topo, _views(topo)) == "dev-s"


def test_latency_first_takes_the_fastest_estimated_first_token() -> None:
    topo = tiny_topology()
    # core-l: 10 ms RTT + 0.1 s prefill beats edge-s (0.5 s prefill) and the far cloud.
    assert _pick("latency-first", topo, _views(topo)) == "core-l"
    loaded = _views(topo, **{"core-l": {"queue_depth": 10, "queued_prompt_tokens": 10000}})
    assert _pick("latency-first", topo, loaded) != "core-l"


def test_data_gravity_keeps_the_request_at_its_site() -> None:
    topo = tiny_topology()
    assert _pick("data-gravity", topo, _views(topo)) == "edge-s"


def test_least_loaded_picks_the_node_with_fewest_outstanding_requests() -> None:
    topo = tiny_topology()
    views = _views(
        topo, **{"edge-s": {"running": 2}, "core-l": {"queue_depth": 1}, "dev-s": {"running": 1}}
    )
    assert _pick("least-loaded", topo, views) == "cloud-l"


def test_round_robin_cycles_through_candidates_in_topology_order() -> None:
    topo = tiny_topology()
    policy = get_policy("round-robin", topo)
    req = request(topo)
    views = _views(topo)
    picks = [views[int(np.argmax(policy.scores(req, views, topo)))].name for _ in range(5)]
    assert picks == ["edge-s", "core-l", "cloud-l", "dev-s", "edge-s"]


def test_random_policy_is_reproducible_for_a_seed() -> None:
    topo = tiny_topology()
    req, views = request(topo), _views(topo)
    a = get_policy("random", topo, seed=3).scores(req, views, topo)
    b = get_policy("random", topo, seed=3).scores(req, views, topo)
    assert np.array_equal(a, b)


def test_weighted_score_avoids_a_node_that_would_miss_the_slo() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "dev-s"))
    # dev-s is cheapest, but its 0.5 s prefill plus a long queue blows the 2 s TTFT target.
    views = _views(topo, **{"dev-s": {"queue_depth": 4, "queued_prompt_tokens": 4000}})
    assert _pick("weighted-score", topo, views) == "core-l"


def test_ordered_gives_pick_then_fallbacks_by_descending_score() -> None:
    assert ordered(np.array([0.1, 0.9, 0.5, 0.9])) == [1, 3, 2, 0]


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_residency_is_never_broken(name: str) -> None:
    topo = tiny_topology(
        sources=[{"name": "eu-app", "site": "a-edge", "share": 1.0, "slo": "eu-only"}]
    )
    reqs = [request(topo, slo="eu-only", prompt=400, output=20) for _ in range(60)]
    arrivals = [i * 0.02 for i in range(60)]
    result = simulate(topo, get_policy(name, topo, seed=1), reqs, arrivals)
    us_node = next(i for i, n in enumerate(topo.nodes) if n.name == "cloud-l")
    assert all(s == SERVED for s in result.table.status)
    assert us_node not in result.table.node


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_drained_node_receives_nothing_after_its_drain_time(name: str) -> None:
    topo = tiny_topology(keep_nodes=("core-l", "edge-s"))
    reqs = [request(topo, prompt=300, output=5) for _ in range(40)]
    arrivals = [i * 0.05 for i in range(40)]
    events = [ScheduledEvent(1.0, "core-l", "drain")]
    result = simulate(topo, get_policy(name, topo), reqs, arrivals, events=events)
    drained = [n.name for n in topo.nodes].index("core-l")
    late = [result.table.node[i] for i, t in enumerate(arrivals) if t >= 1.0]
    assert drained not in late
    assert all(s == SERVED for s in result.table.status)


def test_a_failure_moves_traffic_and_recovery_brings_it_back() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    reqs = [request(topo, prompt=300, output=5) for _ in range(60)]
    arrivals = [i * 0.1 for i in range(60)]
    events = [ScheduledEvent(1.95, "core-l", "fail"), ScheduledEvent(4.05, "core-l", "recover")]
    result = simulate(topo, get_policy("latency-first", topo), reqs, arrivals, events=events)
    core, cloud = 0, 1  # topology order
    nodes = result.table.node
    assert all(nodes[i] == core for i in range(19))
    assert all(nodes[i] == cloud for i in range(20, 40))
    assert all(nodes[i] == core for i in range(41, 60))


def test_failure_replaces_queued_requests_and_loses_running_ones() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    reqs = [request(topo, prompt=5000, output=200) for _ in range(4)]
    events = [ScheduledEvent(0.3, "core-l", "fail")]
    result = simulate(topo, get_policy("data-gravity", topo), reqs, [0.0] * 4, events=events)
    statuses = result.table.status
    assert statuses.count(SERVED) >= 2
    assert all(result.table.node[i] == 1 for i, s in enumerate(statuses) if s == SERVED)


def test_unknown_policy_and_directory_without_scorer_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    topo = tiny_topology()
    with pytest.raises(InputFileError, match="unknown policy 'nope'"):
        load_policy("nope", topo, 0)
    with pytest.raises(InputFileError, match="no scorer.pt in"):
        load_policy(str(tmp_path), topo, 0)
