"""Confidence intervals for proportions, for judging a canary's SLO attainment against the
active arm's: is a difference of a few tenths of a point real, or the noise of one run?

`difference_interval` is Newcombe's hybrid score interval for the difference of two
independent proportions (method 10 of R. G. Newcombe, "Interval estimation for the difference
between independent proportions: comparison of eleven methods", Statistics in Medicine 17,
873-890, 1998), built from each arm's Wilson score interval (E. B. Wilson, JASA 22, 209-212,
1927). Unlike the plain normal (Wald) interval it stays inside [-1, 1] and keeps its coverage
near 0 or 1, where SLO attainment lives (96-98%).
"""

from __future__ import annotations

import math
from statistics import NormalDist

Z_95 = NormalDist().inv_cdf(0.975)  # as the canary watchdog computes its own quantile


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of `successes` out of `n` (n > 0)."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes} of {n}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def difference_interval(
    successes_a: int, n_a: int, successes_b: int, n_b: int, z: float = Z_95
) -> tuple[float, float]:
    """Newcombe's interval for p_a - p_b (method 10; see the module docstring)."""
    low_a, high_a = wilson_interval(successes_a, n_a, z)
    low_b, high_b = wilson_interval(successes_b, n_b, z)
    p_a, p_b = successes_a / n_a, successes_b / n_b
    difference = p_a - p_b
    return (
        difference - math.sqrt((p_a - low_a) ** 2 + (high_b - p_b) ** 2),
        difference + math.sqrt((high_a - p_a) ** 2 + (p_b - low_b) ** 2),
    )
