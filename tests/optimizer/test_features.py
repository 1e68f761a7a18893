"""Feature rows: one definition, the same from simulator state and from a live-style snapshot."""

from __future__ import annotations

import numpy as np

from optimizer.constraints import filter_candidates
from optimizer.decision import node_view
from optimizer.features import FEATURE_NAMES, N_FEATURES, candidate_rows
from optimizer.policies import get_policy
from optimizer.sim import Simulator
from tests.optimizer.fleets import request, tiny_topology


def test_rows_have_one_column_per_feature_name() -> None:
    topo = tiny_topology()
    views = [node_view(topo, n.name, "m1") for n in topo.nodes]
    rows = candidate_rows(request(topo), views, topo)
    assert rows.shape == (4, N_FEATURES) == (4, len(FEATURE_NAMES))
    assert rows.dtype == np.float32
    assert np.isfinite(rows).all()
    tiers = rows[:, FEATURE_NAMES.index("tier_device")]
    assert tiers.tolist() == [0, 0, 0, 1]


def test_simulator_state_and_snapshot_views_give_the_same_rows_and_scores() -> None:
    topo = tiny_topology()
    reqs = [request(topo, prompt=800, output=50, hashes=(1, 2)) for _ in range(6)]
    sim = Simulator(topo, get_policy("round-robin", topo), reqs, [0.0, 0.0, 0.0, 0.1, 0.1, 0.1])
    sim.run()
    probe = request(topo, prompt=1024, output=20, hashes=(1, 2))
    sim_views = sim.views_by_model[0]
    for view, node in zip(sim_views, sim.nodes, strict=True):
        view.prefix_blocks = node.cache.match(0, probe.prefix_hashes)
    # A live engine rebuilds views from telemetry: same numbers through node_view.
    live_views = [
        node_view(
            topo,
            v.name,
            "m1",
            state=v.state,
            kv_used_bytes=v.kv_used_bytes,
            queue_depth=v.queue_depth,
            running=v.running,
            queued_prompt_tokens=v.queued_prompt_tokens,
            prefix_blocks=v.prefix_blocks,
        )
        for v in sim_views
    ]
    sim_c, _ = filter_candidates(probe, sim_views, topo)
    live_c, _ = filter_candidates(probe, live_views, topo)
    assert np.array_equal(candidate_rows(probe, sim_c, topo), candidate_rows(probe, live_c, topo))
    for name in ("weighted-score", "prefix-aware", "kv-aware", "latency-first"):
        policy = get_policy(name, topo)
        assert np.array_equal(policy.scores(probe, sim_c, topo), policy.scores(probe, live_c, topo))


def test_constraint_reasons_name_each_rejected_node() -> None:
    topo = tiny_topology(sources=[{"name": "eu", "site": "a-edge", "share": 1, "slo": "eu-only"}])
    views = [node_view(topo, n.name, "m1") for n in topo.nodes]
    views[0].state = "draining"
    views[1].state = "down"
    req = request(topo, slo="eu-only", site="d-device")
    candidates, rejected = filter_candidates(req, views, topo)
    assert [c.name for c in candidates] == ["dev-s"]
    assert rejected == {"edge-s": "node_draining", "core-l": "node_down", "cloud-l": "residency"}
    far = request(topo, slo=None, site="d-device")
    _, rejected = filter_candidates(far, [node_view(topo, "cloud-l", "m1")], topo)
    assert rejected == {"cloud-l": "unreachable"}
