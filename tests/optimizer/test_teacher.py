"""The warm start's private SLO-aware teacher (optimizer.rl.teacher)."""

from __future__ import annotations

import numpy as np

from optimizer.constraints import filter_candidates
from optimizer.decide.registry import POLICY_NAMES
from optimizer.decide.scorers.base import Policy
from optimizer.decision import NodeView, node_view
from optimizer.rl.teacher import (
    SLO_AWARE,
    SLO_E2E_AWARE,
    TEACHER_NAMES,
    SloAwareTeacher,
    SloE2eAwareTeacher,
    get_teacher,
)
from optimizer.topology import Topology
from tests.optimizer.fleets import request, tiny_topology

GIB = 1 << 30


def _views(topo: Topology, **state: dict[str, int]) -> list[NodeView]:
    return [node_view(topo, n.name, "m1", **state.get(n.name, {})) for n in topo.nodes]


def _pick(
    topo: Topology, views: list[NodeView], teacher: Policy | None = None, **kw: object
) -> str:
    req = request(topo, **kw)  # type: ignore[arg-type]
    candidates, _ = filter_candidates(req, views, topo)
    scores = (teacher or SloAwareTeacher()).scores(req, candidates, topo)
    return candidates[int(np.argmax(scores))].name


def test_it_is_not_one_of_the_heuristics_the_policy_is_compared_with() -> None:
    assert SLO_AWARE not in POLICY_NAMES
    assert SLO_E2E_AWARE not in POLICY_NAMES
    assert set(TEACHER_NAMES) == {SLO_AWARE, SLO_E2E_AWARE, *POLICY_NAMES}


def test_it_builds_built_in_heuristics_by_name_too() -> None:
    topo = tiny_topology()
    assert get_teacher("kv-aware", topo).name == "kv-aware"
    assert get_teacher(SLO_AWARE, topo).name == SLO_AWARE
    assert get_teacher(SLO_E2E_AWARE, topo).name == SLO_E2E_AWARE


def test_it_skips_a_node_that_would_miss_the_ttft_target() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "dev-s"))
    # dev-s is cheaper and emptier of KV, but its queue blows the 2 s TTFT target.
    views = _views(
        topo,
        **{
            "dev-s": {"queue_depth": 4, "queued_prompt_tokens": 4000},
            "core-l": {"kv_used_bytes": 30 * GIB},
        },
    )
    assert _pick(topo, views) == "core-l"


def test_when_no_node_can_make_it_it_takes_the_most_free_kv() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    # 30k tokens take 3 s to prefill on either node: the 2 s target is out of reach.
    views = _views(topo, **{"cloud-l": {"kv_used_bytes": 40 * GIB}})
    assert _pick(topo, views, prompt=30_000) == "core-l"
    views = _views(topo, **{"core-l": {"kv_used_bytes": 40 * GIB}})
    assert _pick(topo, views, prompt=30_000) == "cloud-l"


def test_when_no_node_can_make_it_a_queue_outweighs_free_kv() -> None:
    # On stale telemetry KV use is refreshed only every scrape, while the queue counts the
    # engine's own sends: the fallback must stop sending to the emptiest-KV node once its
    # queue makes it the slowest (docs/learned-policy.md, the teacher's fallback).
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    busy = {"queue_depth": 3, "queued_prompt_tokens": 90_000}
    views = _views(topo, **{"cloud-l": {"kv_used_bytes": 20 * GIB}, "core-l": busy})
    assert _pick(topo, views, prompt=30_000) == "cloud-l"


def test_the_e2e_aware_rule_does_not_fill_a_batch_past_the_e2e_target() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "cloud-l"))
    # cloud-l decodes 3 sequences: a request joining them shares the decode steps and costs
    # a quarter per token, so the SLO-aware rule takes it, though 1,200 tokens at its 14 ms
    # step (16.8 s) leave no margin on the 20 s E2E target (70%: 14 s).
    views = _views(topo, **{"cloud-l": {"running": 3}})
    assert _pick(topo, views, output=1200) == "cloud-l"
    e2e_aware = SloE2eAwareTeacher()
    assert _pick(topo, views, e2e_aware, output=1200) == "core-l"
    # A short answer meets both targets on either node: the two rules agree.
    assert _pick(topo, views, output=11) == _pick(topo, views, e2e_aware, output=11)


def test_the_e2e_aware_rule_keeps_a_late_node_when_it_is_the_only_ttft_feasible_one() -> None:
    topo = tiny_topology(keep_nodes=("core-l", "dev-s"))
    # dev-s cannot make the TTFT target (its queue); core-l can, though its E2E is late.
    views = _views(
        topo,
        **{
            "dev-s": {"queue_depth": 4, "queued_prompt_tokens": 4000},
            "core-l": {"running": 3},
        },
    )
    assert _pick(topo, views, SloE2eAwareTeacher(), output=1200) == "core-l"
