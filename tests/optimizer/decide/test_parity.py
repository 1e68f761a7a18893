"""The vectorised kernel decides as the per-node reference does (optimizer.reference).

On random fleet states and requests (hypothesis, bounded examples to keep the run fast): the
same candidates in the same order, the same rejection reasons, the same estimates and feature
rows, and for every heuristic, the teacher and a trained scorer the same scores and pick.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimizer.constraints import filter_candidates
from optimizer.decide.pipeline import Pipeline
from optimizer.decide.registry import (
    GENERALIST_DIR,
    POLICY_NAMES,
    get_filter,
    get_policy,
)
from optimizer.decide.request import PlacementRequest, placement_request
from optimizer.decide.scorers.learned import load_trained_policy
from optimizer.decide.state.candidates import Candidates, dynamic_of_views
from optimizer.decide.state.fleet import Fleet
from optimizer.decision import NodeView, node_view
from optimizer.estimates import estimate
from optimizer.features import candidate_rows
from optimizer.reference.policies import reference_policy
from optimizer.rl.teacher import get_teacher
from optimizer.topology import NODE_STATES
from optimizer.topology_files import parse_topology
from tests.optimizer.fleets import REPO

# Two models (one node serves both), three jurisdictions, a site no link reaches, every tier.
FLEET = parse_topology(
    """
version: 1
sites:
  - {name: muc, tier: edge, region: eu, jurisdiction: EU}
  - {name: fra, tier: regional, region: eu, jurisdiction: EU}
  - {name: use, tier: cloud, region: us, jurisdiction: US}
  - {name: dev, tier: device, region: eu, jurisdiction: EU}
  - {name: isl, tier: edge, region: ch, jurisdiction: CH}
links:
  - {a: muc, b: fra, rtt_ms: 9, bandwidth_gbps: 10, egress_usd_per_gb: 0.01}
  - {a: fra, b: use, rtt_ms: 88, bandwidth_gbps: 100, egress_usd_per_gb: 0.05}
  - {a: muc, b: use, rtt_ms: 95, bandwidth_gbps: 5, egress_usd_per_gb: 0.05}
  - {a: muc, b: dev, rtt_ms: 4, bandwidth_gbps: 1}
accelerators:
  - {name: l4, memory_gib: 24}
  - {name: h100, memory_gib: 80}
models:
  - {name: llama, memory_gib: 16, kv_bytes_per_token: 131072}
  - {name: qwen, memory_gib: 15, kv_bytes_per_token: 57344}
profiles:
  - {model: llama, accelerator: h100, prefill_tokens_per_s: 18000, decode_step_ms: 9,
     decode_step_ms_per_seq: 0.12, max_batch: 128}
  - {model: llama, accelerator: l4, prefill_tokens_per_s: 3500, decode_step_ms: 28,
     decode_step_ms_per_seq: 0.5, max_batch: 32}
  - {model: qwen, accelerator: l4, prefill_tokens_per_s: 3800, decode_step_ms: 26,
     decode_step_ms_per_seq: 0.5, max_batch: 32}
  - {model: qwen, accelerator: h100, prefill_tokens_per_s: 19000, decode_step_ms: 8,
     decode_step_ms_per_seq: 0.1, max_batch: 128}
nodes:
  - {name: muc-l4, site: muc, accelerator: l4, usd_per_hour: 0.8, models: [llama]}
  - {name: muc-q, site: muc, accelerator: l4, usd_per_hour: 0.7, models: [qwen]}
  - {name: fra-1, site: fra, accelerator: h100, usd_per_hour: 2.9, models: [llama]}
  - {name: fra-2, site: fra, accelerator: h100, gpus: 2, usd_per_hour: 5.5,
     models: [llama, qwen]}
  - {name: use-1, site: use, accelerator: h100, usd_per_hour: 2.2, models: [llama]}
  - {name: use-2, site: use, accelerator: h100, usd_per_hour: 2.1, models: [qwen]}
  - {name: dev-1, site: dev, accelerator: l4, usd_per_hour: 0.1, models: [llama]}
  - {name: isl-1, site: isl, accelerator: h100, usd_per_hour: 1.0, models: [llama]}
sources:
  - {name: app, site: muc, share: 1, slo: interactive}
slos:
  - {name: interactive, ttft_p95_ms: 800, e2e_p95_ms: 15000, residency: EU}
  - {name: batch, ttft_p95_ms: 10000, e2e_p95_ms: 120000, max_usd_per_1k: 2.0}
  - {name: open, ttft_p95_ms: 2000, e2e_p95_ms: 30000}
""",
    "parity.yaml",
)
TRAINED = REPO / "optimizer" / "trained" / "ppo-fleet-demo"
KERNEL_POLICIES = (*POLICY_NAMES, "slo-aware")


@dataclass
class Case:
    request: PlacementRequest
    views: list[NodeView]
    fleet: Fleet


@st.composite
def cases(draw: st.DrawFn) -> Case:
    topology = FLEET
    model = draw(st.sampled_from([m.name for m in topology.models]))
    hashes = tuple(draw(st.lists(st.integers(0, 20), max_size=8)))
    request = placement_request(
        topology,
        model=model,
        source_site=draw(st.sampled_from([s.name for s in topology.sites])),
        slo=draw(st.sampled_from([None, "interactive", "batch", "open"])),
        prompt_tokens=draw(st.integers(1, 600_000)),
        max_output_tokens=draw(st.integers(1, 4000)),
        prefix_hashes=hashes,
    )
    fleet = Fleet(topology)
    views = []
    for i, node in enumerate(topology.nodes):
        base = node_view(topology, node.name, model)
        state = draw(st.sampled_from(NODE_STATES)) if draw(st.booleans()) else "active"
        fleet.set_state(i, state)
        views.append(
            node_view(
                topology,
                node.name,
                model,
                state=state,
                queue_depth=draw(st.integers(0, 300)),
                running=draw(st.integers(0, max(base.max_batch, 1) + 3)),
                kv_used_bytes=draw(st.integers(0, base.kv_capacity_bytes)),
                queued_prompt_tokens=draw(st.sampled_from([0, draw(st.integers(0, 10**6))])),
                prefix_blocks=draw(st.integers(0, len(hashes))),
            )
        )
    return Case(request, views, fleet)


CONSTRAINTS = Pipeline([get_filter("constraints")])


def _kernel(case: Case) -> tuple[Candidates, dict[str, str]]:
    dynamic = dynamic_of_views(case.fleet, case.views)
    _, trip = CONSTRAINTS.candidates(case.fleet, case.request, dynamic, None)
    index = trip.index
    blocks = np.array([case.views[i].prefix_blocks for i in index.tolist()], dtype=np.float64)
    candidates = Candidates(case.fleet, case.request, index, dynamic, prefix_blocks=blocks)
    return candidates, trip.rejected()


FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(cases())
def test_kernel_mask_reasons_estimates_and_rows_are_the_references(case: Case) -> None:
    kernel, rejected = _kernel(case)
    reference, reference_rejected = filter_candidates(case.request, case.views, FLEET)
    assert kernel.names == [v.name for v in reference]
    assert rejected == reference_rejected
    if not reference:
        return
    est, ref = kernel.est, estimate(case.request, reference, FLEET)
    for field in ref.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(est, field), getattr(ref, field), err_msg=field)
    np.testing.assert_array_equal(kernel.rows(), candidate_rows(case.request, reference, FLEET))


@FAST
@given(cases(), st.integers(0, 3))
def test_every_heuristic_scores_and_picks_as_its_reference(case: Case, seed: int) -> None:
    kernel, _ = _kernel(case)
    reference, _ = filter_candidates(case.request, case.views, FLEET)
    if not reference:
        return
    for name in KERNEL_POLICIES:
        policy = get_teacher(name, FLEET) if name == "slo-aware" else get_policy(name, FLEET, seed)
        oracle = reference_policy(name, FLEET, seed)
        for _ in range(2):  # twice: stateful heuristics move on alike
            scores = policy.score(kernel)
            expected = oracle.scores(case.request, reference, FLEET)
            np.testing.assert_array_equal(scores, expected, err_msg=name)
            assert int(np.argmax(scores)) == int(np.argmax(expected))


@pytest.fixture(scope="module")
def trained() -> object:
    """The scorer itself, not the trust region `load_policy` serves it in."""
    return load_trained_policy(TRAINED)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_the_learned_scorer_scores_and_picks_as_torchscript_on_reference_rows(
    case: Case, trained: object
) -> None:
    from optimizer.decide.scorers.learned import TrainedPolicy

    assert isinstance(trained, TrainedPolicy) and trained.fast is not None
    kernel, _ = _kernel(case)
    reference, _ = filter_candidates(case.request, case.views, FLEET)
    if not reference:
        return
    scores = trained.score(kernel)
    expected = trained.score_rows_torch(candidate_rows(case.request, reference, FLEET))
    np.testing.assert_allclose(scores, expected, rtol=1e-4, atol=1e-4)
    top = np.sort(expected)[::-1]
    if len(top) == 1 or top[0] - top[1] > 1e-3:  # a near-tie may fall either way in float32
        assert int(np.argmax(scores)) == int(np.argmax(expected))


@pytest.fixture(scope="module")
def generalist() -> object:
    return load_trained_policy(GENERALIST_DIR)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_the_generalist_scores_its_scorer_minus_the_weighted_reference_cost(
    case: Case, generalist: object
) -> None:
    """policy.json's decision_cost_weight: the scorer's scores minus the weight times the
    reference estimate of each candidate's USD per 1k requests."""
    from optimizer.decide.scorers.learned import TrainedPolicy

    assert isinstance(generalist, TrainedPolicy) and generalist.cost_weight > 0
    kernel, _ = _kernel(case)
    reference, _ = filter_candidates(case.request, case.views, FLEET)
    if not reference:
        return
    rows = candidate_rows(case.request, reference, FLEET)
    cost_1k = estimate(case.request, reference, FLEET).cost_usd * 1000.0
    expected = generalist.score_rows_torch(rows) - generalist.cost_weight * cost_1k
    np.testing.assert_allclose(generalist.score(kernel), expected, rtol=1e-4, atol=1e-4)
