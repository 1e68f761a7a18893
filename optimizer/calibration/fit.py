"""Solving one calibration step: weighted least squares with a weak prior and bounds.

The unknowns are solved as ratios z = θ / θ_nominal, so every column has the same scale.
Parameters without enough data are held (at z = 1, their nominal value). The free ones get a
weak ridge prior toward their nominal value (λ² per parameter, see PRIOR_WEIGHT): it only
decides directions the data leaves open, such as `decode_step_ms_per_seq` when every request
decoded at the same batch size, and is negligible wherever the data speaks. A ratio that
falls below its bound is held at the bound and the rest solved again (an active-set pass).

Intervals come from the Jacobian of the last step: cov(z) = s² (AᵀA + λ²I)⁻¹ over the free
parameters, s² = RSS / (rows − free), and a 95% interval z ± 1.96 sd (normal approximation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimizer.calibration.design import NormalEquations

# λ² as a fraction of the rows: a relative deviation d from nominal costs as much as a
# relative error of sqrt(PRIOR_WEIGHT) · d on every row, i.e. nothing the data can see.
PRIOR_WEIGHT = 1e-4
Z_95 = 1.959964
# Lowest ratio to nominal a rate or step may take (per-sequence steps may reach 0).
MIN_RATIO = 1e-3


@dataclass(frozen=True)
class Step:
    """The solution of one step: ratios to nominal and their standard deviations (0 where
    held), and the weighted residual sum of squares."""

    z: np.ndarray
    sd: np.ndarray
    rss: float


def solve(eq: NormalEquations, nominal: np.ndarray, free: np.ndarray, lower: np.ndarray) -> Step:
    """Minimise Σ rows² + λ² Σ_free (z − 1)² over the free ratios, others held at 1."""
    scale = nominal
    m = eq.ata * np.outer(scale, scale)
    v = eq.atb * scale
    lam2 = PRIOR_WEIGHT * max(eq.rows, 1)
    z = np.ones_like(nominal)
    held = ~free.copy()
    for _ in range(len(z)):
        f = ~held
        if not f.any():
            break
        lhs = m[np.ix_(f, f)] + lam2 * np.eye(int(f.sum()))
        rhs = v[f] - m[np.ix_(f, held)] @ z[held] + lam2
        z[f] = np.linalg.solve(lhs, rhs)
        below = f & (z < lower)
        if not below.any():
            break
        z[below] = lower[below]
        held |= below
    rss = max(float(z @ m @ z - 2.0 * z @ v + eq.btb), 0.0)
    sd = np.zeros_like(z)
    f = ~held
    dof = eq.rows - int(f.sum())
    if f.any() and dof > 0:
        lhs = m[np.ix_(f, f)] + lam2 * np.eye(int(f.sum()))
        sd[f] = np.sqrt(np.clip(np.diag(np.linalg.inv(lhs)) * rss / dof, 0.0, None))
    return Step(z=z, sd=sd, rss=rss)


def interval(z: float, sd: float) -> tuple[float, float]:
    """The 95% interval of a ratio, clipped at 0."""
    return max(z - Z_95 * sd, 0.0), z + Z_95 * sd
