"""Feature rows: one definition, the same from simulator state and from a live-style snapshot."""

from __future__ import annotations

import numpy as np

from optimizer.constraints import filter_candidates
from optimizer.decide.registry import get_policy
from optimizer.decide.state.features import FEATURE_NAMES, N_FEATURES
from optimizer.decision import node_view
from optimizer.features import candidate_rows
from optimizer.reference.policies import reference_policy
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


def test_simulator_columns_give_the_rows_and_scores_of_node_views_of_the_same_state() -> None:
    topo = tiny_topology()
    reqs = [request(topo, prompt=800, output=50, hashes=(1, 2)) for _ in range(6)]
    sim = Simulator(topo, get_policy("round-robin", topo), reqs, [0.0, 0.0, 0.0, 0.1, 0.1, 0.1])
    sim.start()
    for _ in range(4):  # leave work queued and running
        rid = sim.advance()
        assert rid is not None
        sim.place(rid, sim.now)
    probe = request(topo, prompt=1024, output=20, hashes=(1, 2))
    sim.requests = [*sim.requests, probe]
    kernel = sim.candidates(len(sim.requests) - 1)
    # The same numbers as per-node views, as the engine built them before the kernel.
    views = [
        node_view(
            topo,
            n.name,
            "m1",
            state=n.state,
            queue_depth=int(sim.dynamic[n.index, 0]),
            running=int(sim.dynamic[n.index, 1]),
            kv_used_bytes=int(sim.dynamic[n.index, 2]),
            queued_prompt_tokens=int(sim.dynamic[n.index, 3]),
            prefix_blocks=n.cache.match(0, probe.prefix_hashes),
        )
        for n in sim.nodes
    ]
    assert sum(v.queue_depth + v.running for v in views) > 0
    reference, _ = filter_candidates(probe, views, topo)
    assert kernel.names == [v.name for v in reference]
    assert np.array_equal(kernel.rows(), candidate_rows(probe, reference, topo))
    for name in ("weighted-score", "prefix-aware", "kv-aware", "latency-first"):
        assert np.array_equal(
            get_policy(name, topo).score(kernel),
            reference_policy(name, topo).scores(probe, reference, topo),
        )


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
