"""Per-candidate feature rows for learned scorers: one definition for simulator and live engine.

Each row holds the request's features (broadcast) and one candidate node's features, each on
a fixed scale chosen so typical values fall within about 0..10 (docs/architecture.md: normalise per
feature with fixed scales, never per row slot, so a scorer stays permutation invariant). Estimates
come from `optimizer.estimates`, shared with the heuristic policies. `candidate_rows` is the
per-node definition; decisions compute the same rows on columns (`Candidates.rows`, checked
equal by the parity tests). Bump FEATURE_VERSION on any change to names, order or scales (in
both): a trained scorer records the version it was trained on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optimizer.decide.request import PlacementRequest, slo_targets_s
from optimizer.decide.state.features import MAX_RATIO, N_FEATURES
from optimizer.decision import NodeView
from optimizer.estimates import estimate
from optimizer.topology import TIERS, Topology


def candidate_rows(
    request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
) -> np.ndarray:
    """The (len(candidates), N_FEATURES) float32 feature matrix, rows in candidate order."""
    n = len(candidates)
    rows = np.zeros((n, N_FEATURES), dtype=np.float32)
    if n == 0:
        return rows
    ttft_target, e2e_target = slo_targets_s(request, topology)
    rows[:, 0] = request.prompt_tokens / 1000.0
    rows[:, 1] = request.max_output_tokens / 1000.0
    rows[:, 2] = ttft_target
    rows[:, 3] = e2e_target / 60.0
    rows[:, 4] = float(request.residency is not None)

    est = estimate(request, candidates, topology)
    rows[:, 5] = est.ttft_s
    rows[:, 6] = est.e2e_s / 60.0
    rows[:, 7] = est.wait_s
    rows[:, 8] = est.prefill_s
    rows[:, 9] = np.minimum(est.ttft_s / ttft_target, MAX_RATIO)
    rows[:, 10] = np.minimum(est.e2e_s / e2e_target, MAX_RATIO)
    rows[:, 11] = est.cost_usd * 1000.0
    rows[:, 12] = est.rtt_s * 10.0
    rows[:, 13] = est.transfer_s
    rows[:, 14] = est.cached_fraction
    rows[:, 15] = est.same_site

    tier_column = {tier: 22 + i for i, tier in enumerate(TIERS)}
    for i, node in enumerate(candidates):
        rows[i, 16] = node.queue_depth / node.max_batch
        rows[i, 17] = node.running / node.max_batch
        rows[i, 18] = node.kv_used_bytes / node.kv_capacity_bytes
        rows[i, 19] = node.usd_per_hour / 10.0
        rows[i, 20] = node.prefill_tokens_per_s / 10000.0
        rows[i, 21] = node.decode_step_ms / 100.0
        rows[i, tier_column[node.tier]] = 1.0
    return rows
