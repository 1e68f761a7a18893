"""Why the learned scorer picked its node: integrated gradients from the runner-up's row to the
pick's (optimizer/decide/explain_learned.py), and the receipt's estimates against the
runner-up's (optimizer/decide/explain.py)."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.decide.explain import estimates_against_runner_up
from optimizer.decide.explain_learned import pick_attribution
from optimizer.decide.pipeline import Choice, Pipeline
from optimizer.decide.registry import get_filter, load_policy
from optimizer.decide.request import PlacementRequest
from optimizer.decide.scorers.learned import TrainedPolicy
from optimizer.decide.state.features import FEATURE_NAMES, N_FEATURES
from optimizer.decide.state.fleet import D_KV_USED, D_QUEUE, D_RUNNING, Fleet


@pytest.fixture(scope="module")
def generalist(fleet: Fleet) -> TrainedPolicy:
    policy = load_policy("generalist", fleet.topology)
    assert isinstance(policy, TrainedPolicy) and policy.fast is not None
    return policy


def _choice(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray, policy: TrainedPolicy
) -> Choice:
    """A decision on a loaded fleet, so candidates differ in more than their hardware."""
    rng = np.random.default_rng(7)
    dynamic[:, D_QUEUE] = rng.integers(0, 20, fleet.size)
    dynamic[:, D_RUNNING] = rng.integers(0, 30, fleet.size)
    dynamic[:, D_KV_USED] = rng.uniform(0, 1e5, fleet.size)
    choice = Pipeline([get_filter("constraints")]).decide(fleet, request_, dynamic, None, policy, 5)
    assert len(choice.order) >= 2
    return choice


def test_the_attributions_add_up_to_the_scorers_margin(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray, generalist: TrainedPolicy
) -> None:
    choice = _choice(fleet, request_, dynamic, generalist)
    assert choice.scores is not None
    why = pick_attribution(
        generalist, choice.candidates, choice.scores, choice.order, top=N_FEATURES
    )
    assert why is not None and why["method"] == "integrated-gradients"
    total = sum(f["contribution"] for f in why["features"])
    # Completeness (Sundararajan et al. 2017): up to the quadrature's error.
    assert total == pytest.approx(why["scorer_margin"], abs=1e-3 * abs(why["scorer_margin"]) + 1e-4)
    assert why["residual"] == pytest.approx(why["scorer_margin"] - total)
    # The served margin is the scorer's plus the decision cost weight's term.
    assert why["margin"] == pytest.approx(why["scorer_margin"] + why["cost_term"], abs=1e-4)
    assert why["margin"] >= 0
    pick, runner = choice.order[0], choice.order[1]
    assert why["runner_up"] == choice.candidates.names[runner]
    rows = choice.candidates.rows()
    first = why["features"][0]
    f = FEATURE_NAMES.index(first["feature"])
    assert first["pick"] == pytest.approx(rows[pick, f], abs=1e-4)
    assert first["runner_up"] == pytest.approx(rows[runner, f], abs=1e-4)


def test_the_top_features_are_the_largest_in_size(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray, generalist: TrainedPolicy
) -> None:
    choice = _choice(fleet, request_, dynamic, generalist)
    assert choice.scores is not None
    every = pick_attribution(
        generalist, choice.candidates, choice.scores, choice.order, top=N_FEATURES
    )
    top = pick_attribution(generalist, choice.candidates, choice.scores, choice.order)
    assert every is not None and top is not None
    sizes = sorted((abs(f["contribution"]) for f in every["features"]), reverse=True)
    assert [abs(f["contribution"]) for f in top["features"]] == sizes[:5]


def test_the_gradients_are_the_scores_slopes(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray, generalist: TrainedPolicy
) -> None:
    fast = generalist.fast
    assert fast is not None
    rows = _choice(fleet, request_, dynamic, generalist).candidates.rows()
    shared = fast.shared_term(rows)
    scores, gradients = fast.row_scores_and_gradients(rows, shared)
    # With the set's own context, the scores are the scorer's.
    assert scores == pytest.approx(fast(rows), abs=1e-4)
    x = rows[:1].astype(np.float64)
    eps = 1e-5
    for f in range(N_FEATURES):
        up, down = x.copy(), x.copy()
        up[0, f] += eps
        down[0, f] -= eps
        slope = (
            fast.row_scores_and_gradients(up, shared)[0]
            - fast.row_scores_and_gradients(down, shared)[0]
        ) / (2 * eps)
        assert gradients[0, f] == pytest.approx(slope[0], abs=1e-5, rel=1e-4)


def test_one_candidate_is_not_attributed(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray, generalist: TrainedPolicy
) -> None:
    choice = _choice(fleet, request_, dynamic, generalist)
    assert choice.scores is not None
    assert pick_attribution(generalist, choice.candidates, choice.scores, choice.order[:1]) is None


def _row(node: str, ttft: float, e2e: float, cost: float) -> dict[str, object]:
    return {"node": node, "ttft_ms": ttft, "e2e_ms": e2e, "cost_usd": cost}


def test_a_pick_with_worse_estimates_than_the_runner_up_is_said_to_be() -> None:
    said = estimates_against_runner_up(
        [_row("jetson", 900, 13_600, 0.001), _row("a100", 400, 3_400, 0.002)]
    )
    assert said is not None
    assert said["runner_up"] == "a100" and said["worse"] == ["ttft_ms", "e2e_ms"]
    assert said["text"].startswith("The pick's estimated TTFT and end-to-end latency are worse")


def test_a_pick_no_worse_on_any_estimate_says_nothing() -> None:
    assert estimates_against_runner_up([_row("a", 1, 1, 1), _row("b", 1, 2, 3)]) is None
    assert estimates_against_runner_up([_row("a", 1, 1, 1)]) is None
    assert estimates_against_runner_up([]) is None
