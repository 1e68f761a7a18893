"""Why a learned scorer picked its node over the runner-up, and whether the pick's own
estimates say otherwise (issue #28: "a learned decision explained").

`pick_attribution` splits the score margin between the pick and the runner-up over the
features by **integrated gradients** (M. Sundararajan, A. Taly, Q. Yan, "Axiomatic Attribution
for Deep Networks", ICML 2017) with the runner-up's row as the baseline: feature f gets
(x_pick,f - x_runner,f) times the mean of the score's gradient along the straight line from
the runner-up's row to the pick's, here a 32-point midpoint rule. The scorer is a Deep Sets
network (`optimizer.rl.network.CandidateScorer`): every row's score also reads a context
pooled over the whole candidate set, the same for both rows, so it is held fixed and the
margin is a function of the two rows alone. Then the attributions sum to the scorer's margin
(the completeness axiom; what the quadrature misses is reported as `residual`), and the
decision's cost price (policy.json's `decision_cost_weight`) is its own term. Gradients come
from the scorer's numpy twin (`NumpyScorer.row_scores_and_gradients`); a scorer without one
is not explained.

It runs off the hot path: only for sampled learned decisions and those asked to `explain`
(console/placement/engine/core.py). What a receipt says of the pick's own estimates against
the runner-up's is `optimizer.decide.explain.estimates_against_runner_up`, read with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optimizer.decide.scorers.learned import TrainedPolicy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.features import FEATURE_NAMES

METHOD = "integrated-gradients"
STEPS = 32
TOP_FEATURES = 5


def pick_attribution(
    policy: TrainedPolicy,
    candidates: Candidates,
    scores: np.ndarray,
    order: list[int],
    *,
    steps: int = STEPS,
    top: int = TOP_FEATURES,
) -> dict[str, Any] | None:
    """The features that moved the pick (`order[0]`) over the runner-up (`order[1]`) the
    most, by integrated gradients (module docstring); None with fewer than two candidates or
    a scorer without a numpy twin."""
    if policy.fast is None or len(order) < 2:
        return None
    pick, runner = order[0], order[1]
    rows = candidates.rows()
    shared = policy.fast.shared_term(rows)
    x_pick, x_runner = rows[pick].astype(np.float64), rows[runner].astype(np.float64)
    alphas = (np.arange(steps, dtype=np.float64) + 0.5) / steps
    path = x_runner[None, :] + alphas[:, None] * (x_pick - x_runner)[None, :]
    _, gradients = policy.fast.row_scores_and_gradients(path, shared)
    contributions = (x_pick - x_runner) * gradients.mean(axis=0)
    ends, _ = policy.fast.row_scores_and_gradients(np.stack((x_pick, x_runner)), shared)
    scorer_margin = float(ends[0] - ends[1])
    cost = candidates.est.cost_usd
    cost_term = -policy.cost_weight * 1000.0 * float(cost[pick] - cost[runner])
    ranked = np.argsort(-np.abs(contributions), kind="stable")[:top]
    return {
        "method": METHOD,
        "steps": steps,
        "runner_up": candidates.names[runner],
        "margin": float(scores[pick] - scores[runner]),
        "scorer_margin": scorer_margin,
        "cost_term": cost_term,
        "residual": scorer_margin - float(contributions.sum()),
        "features": [
            {
                "feature": FEATURE_NAMES[f],
                "pick": round(float(x_pick[f]), 4),
                "runner_up": round(float(x_runner[f]), 4),
                "contribution": float(contributions[f]),
            }
            for f in ranked.tolist()
        ],
    }
