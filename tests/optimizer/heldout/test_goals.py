"""The held-out suite's rules on hand-made numbers: the best heuristic, the regime, and issue
#26's goals at their boundaries."""

from __future__ import annotations

import pytest

from optimizer.heldout.goals import Summary, best_heuristic, judge, regime


def _s(att: float, mean: float = 1000.0, p95: float = 4000.0, cost: float = 1.0) -> Summary:
    return Summary(att, mean, p95, cost)


def test_the_best_heuristic_has_the_highest_attainment_and_ties_go_to_the_lower_mean_ttft() -> None:
    assert best_heuristic({"a": _s(0.90), "b": _s(0.95, mean=9000.0)}) == "b"
    assert best_heuristic({"a": _s(0.95, mean=900.0), "b": _s(0.95, mean=800.0)}) == "b"
    # A full tie is settled by name, so the choice never depends on dict order.
    assert best_heuristic({"z": _s(0.95), "m": _s(0.95)}) == "m"
    with pytest.raises(ValueError, match="at least one heuristic"):
        best_heuristic({})


@pytest.mark.parametrize(
    ("best", "oracle", "utilisation", "expected"),
    [
        (0.849, 1.0, 0.25, "heavy"),  # below 85% of the oracle, even at a light utilisation
        (0.85, 1.0, 2.0, "moderate"),  # exactly 85% is not heavy
        (0.80, 0.95, 1.0, "heavy"),  # 0.80 < 0.8075
        (0.99, 1.0, 0.3, "light"),
        (0.99, 1.0, 0.31, "moderate"),
    ],
)
def test_the_regime_follows_the_oracle_share_and_the_utilisation(
    best: float, oracle: float, utilisation: float, expected: str
) -> None:
    assert regime(best, oracle, utilisation) == expected


@pytest.mark.parametrize(
    ("ours", "passed"),
    [
        (_s(0.945, mean=1100.0), True),  # 0.5 pt below, 10% slower: both at the bar
        (_s(0.9449, mean=1000.0), False),  # 0.51 pt below
        (_s(0.96, mean=1101.0), False),  # better attainment does not excuse a slower mean
        (_s(0.97, mean=500.0), True),
    ],
)
def test_light_and_moderate_goals_allow_half_a_point_and_ten_percent(
    ours: Summary, passed: bool
) -> None:
    best = _s(0.95, mean=1000.0)
    for role in ("zero-shot", "fine-tuned"):
        for cell_regime in ("light", "moderate"):
            assert judge(role, cell_regime, ours, best).passed is passed  # type: ignore[arg-type]


def test_the_zero_shot_heavy_goal_is_three_points_at_no_higher_mean_ttft() -> None:
    best = _s(0.60, mean=5000.0, p95=20000.0)
    ok = judge("zero-shot", "heavy", _s(0.63, mean=5000.0, p95=90000.0), best)
    assert ok.passed and ok.margin_pt == pytest.approx(3.0) and ok.ttft_mean_ratio == 1.0
    assert not judge("zero-shot", "heavy", _s(0.629, mean=4000.0), best).passed
    assert not judge("zero-shot", "heavy", _s(0.70, mean=5001.0), best).passed


def test_the_fine_tuned_heavy_goal_is_five_points_at_a_lower_p95() -> None:
    best = _s(0.60, mean=5000.0, p95=20000.0)
    assert judge("fine-tuned", "heavy", _s(0.65, mean=9000.0, p95=19999.0), best).passed
    assert not judge("fine-tuned", "heavy", _s(0.65, p95=20000.0), best).passed
    assert not judge("fine-tuned", "heavy", _s(0.649, p95=1000.0), best).passed


def test_ratios_to_a_zero_ttft_are_infinite_only_when_ours_is_not_zero() -> None:
    best = _s(1.0, mean=0.0, p95=0.0)
    assert judge("zero-shot", "light", _s(1.0, mean=0.0, p95=0.0), best).ttft_mean_ratio == 1.0
    slower = judge("zero-shot", "light", _s(1.0, mean=5.0, p95=5.0), best)
    assert slower.ttft_mean_ratio == float("inf") and not slower.passed
