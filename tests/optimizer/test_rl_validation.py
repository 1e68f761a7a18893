"""Training's validation score (`optimizer.rl.validation`): attainment, with a penalty when the mean
TTFT exceeds the best heuristic's on the same replay, so the kept weights do not buy
attainment by parking requests, and one when the cost per request exceeds the cheapest
heuristic's within 0.5 point of the best (issue #18)."""

from __future__ import annotations

from typing import Any

import pytest

from optimizer.rl.config import TrainConfig
from optimizer.rl.validation import reference_cost_per_1k, reference_ttft_mean_ms, summarise

CONFIG = TrainConfig(topology="t.yaml", trace="x.csv", out="out")


def _replay(
    attainment: float, ttft_mean_ms: float, ttft_p95_ms: float = 8000.0, cost: float = 2.0
) -> dict[str, Any]:
    return {
        "slo_attainment": attainment,
        "ttft_mean_ms": ttft_mean_ms,
        "ttft_p95_ms": ttft_p95_ms,
        "cost_per_1k_requests": cost,
        "load": 1.0,
        "utilisation": 0.9,
    }


def test_it_takes_each_replays_reference_from_its_most_attaining_heuristic() -> None:
    first = [_replay(0.90, 1000.0), _replay(0.60, 9000.0)]
    second = [_replay(0.80, 500.0), _replay(0.70, 12000.0)]
    tie = [_replay(0.90, 800.0), _replay(0.50, 100.0)]
    assert reference_ttft_mean_ms([first, second, tie]) == [800.0, 12000.0]


def test_it_scores_parking_below_a_smaller_win_at_the_heuristics_mean_ttft() -> None:
    # A retraining of the generalist on h900 at heavy load: +5.3 points over the
    # best heuristic at 5,866 against its 4,508 ms mean TTFT. The same p95 for both, so only
    # the mean TTFT separates them.
    reference = [4508.0]
    parking = summarise([_replay(0.88, 5866.0)], CONFIG, reference)
    fair = summarise([_replay(0.86, 4508.0)], CONFIG, reference)
    assert parking["slo_attainment"] > fair["slo_attainment"]
    assert parking["ttft_mean_excess"] == pytest.approx(0.2633, abs=1e-3)
    assert fair["ttft_mean_excess"] == 0.0
    assert parking["validation_score"] < fair["validation_score"]


def test_it_does_not_reward_a_mean_ttft_below_the_heuristics() -> None:
    at = summarise([_replay(0.9, 2000.0)], CONFIG, [2000.0])
    below = summarise([_replay(0.9, 500.0)], CONFIG, [2000.0])
    assert below["ttft_mean_excess"] == at["ttft_mean_excess"] == 0.0
    assert below["validation_score"] == at["validation_score"]


def test_it_averages_the_excess_over_replays_and_ignores_it_without_a_reference() -> None:
    results = [_replay(0.9, 2000.0), _replay(0.9, 1000.0)]
    metrics = summarise(results, CONFIG, [1000.0, 1000.0])
    assert metrics["ttft_mean_excess"] == pytest.approx(0.6931 / 2, abs=1e-4)
    unreferenced = summarise(results, CONFIG)
    assert unreferenced["ttft_mean_excess"] == 0.0
    gap = unreferenced["validation_score"] - metrics["validation_score"]
    assert gap == pytest.approx(CONFIG.validation_ttft_excess_weight * 0.6931 / 2, abs=1e-4)


def test_the_cost_bar_is_the_cheapest_heuristic_within_half_a_point_of_the_best() -> None:
    # Replay 1: the best (0.970, dearest) and one 0.4 point below it at half the cost set the
    # bar; one 0.6 point below, cheaper still, does not. Replay 2: only the best qualifies.
    best = [_replay(0.970, 1000.0, cost=3.0), _replay(0.60, 1000.0, cost=5.0)]
    close = [_replay(0.966, 1000.0, cost=1.5), _replay(0.50, 1000.0, cost=1.0)]
    far = [_replay(0.964, 1000.0, cost=0.5), _replay(0.40, 1000.0, cost=0.1)]
    assert reference_cost_per_1k([best, close, far]) == [1.5, 5.0]


def test_it_scores_a_dearer_policy_below_a_cheaper_one_at_the_same_attainment() -> None:
    # The demo fleet's canary: the generalist at weighted-score's attainment, 9% dearer.
    dearer = summarise([_replay(0.97, 1500.0, cost=2.95)], CONFIG, [1500.0], [2.70])
    cheaper = summarise([_replay(0.97, 1500.0, cost=2.60)], CONFIG, [1500.0], [2.70])
    assert dearer["cost_excess"] == pytest.approx(0.0886, abs=1e-3)
    assert cheaper["cost_excess"] == 0.0
    gap = cheaper["validation_score"] - dearer["validation_score"]
    assert gap == pytest.approx(CONFIG.validation_cost_excess_weight * 0.0886, abs=1e-3)


def test_a_heavy_load_win_outweighs_its_cost_premium() -> None:
    # The held-out heavy cells: +6 points at up to 9% above the heuristic's cost is kept.
    win = summarise([_replay(0.886, 4000.0, cost=2.18)], CONFIG, [4500.0], [2.0])
    tie = summarise([_replay(0.827, 4000.0, cost=2.0)], CONFIG, [4500.0], [2.0])
    assert win["validation_score"] > tie["validation_score"]
