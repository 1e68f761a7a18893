"""The canary's confidence intervals against the values their authors published."""

from __future__ import annotations

import pytest

from optimizer.stats import difference_interval, wilson_interval


def test_it_reproduces_newcombes_worked_example() -> None:
    # Newcombe (1998), Table II, example (a): 56/70 against 48/80, method 10.
    low, high = difference_interval(56, 70, 48, 80)
    assert low == pytest.approx(0.0524, abs=5e-5)
    assert high == pytest.approx(0.3339, abs=5e-5)


def test_the_wilson_interval_matches_newcombes_single_proportion_examples() -> None:
    # Newcombe, "Two-sided confidence intervals for the single proportion" (Statistics in
    # Medicine 17, 857-872, 1998), Table I, method 3 (score, without continuity correction).
    assert wilson_interval(81, 263) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert wilson_interval(15, 148) == pytest.approx((0.0624, 0.1605), abs=5e-5)
    assert wilson_interval(0, 20) == pytest.approx((0.0, 0.1611), abs=5e-5)


def test_it_stays_inside_the_possible_range_at_the_edges() -> None:
    low, high = difference_interval(10, 10, 0, 10)
    assert 0 < low < high <= 1.0
    assert difference_interval(0, 5, 5, 5)[0] >= -1.0


@pytest.mark.parametrize("args", [(5, 0), (-1, 10), (11, 10)])
def test_impossible_counts_are_refused(args: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(*args)
