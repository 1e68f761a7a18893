"""Solving one calibration step: weighted least squares with a weak prior and bounds.

The unknowns are solved as ratios z = θ / θ_nominal, so every column has the same scale.
Parameters without enough data are held (at z = 1, their nominal value). The free ones get a
weak ridge prior toward their nominal value (λ² per parameter, see PRIOR_WEIGHT): it only
decides directions the data leaves open, such as `decode_step_ms_per_seq` when every request
decoded at the same batch size, and is negligible wherever the data speaks. A ratio that
falls below its bound is held at the bound and the rest solved again (an active-set pass).

Intervals come from the Jacobian of the last step: cov(z) = s² (AᵀA + λ²I)⁻¹ over the free
parameters, s² = RSS / (rows − free), and a 95% interval z ± 1.96 sd (normal approximation).

Identifiability (issue #26: never move a value the data cannot pin down): a free parameter is
identified when at least `min_rows` rows inform it and the data alone, without the prior,
pins it to within `max_rel_ci` (the half-width of its 95% interval, relative to the value:
cov = s² (AᵀA + εI)⁻¹, ε only to keep a null direction's variance finite and huge). The one
with the widest interval is held at nominal and the rest solved again, until every free
parameter is identified: a pair the data cannot tell apart (a decode step and a per-sequence
step at one batch size) loses the worse-determined of the two, and the other then carries
their sum, which the data does pin down.

Evidence confounded by queueing (issue #26): a value is identified only from rows in which
queueing does not stand in for service. A profile's prefill rate is also informed by decode
rows (another request's prefill stalls a decode) and by waits, both of which sum what the
replay's queue served, so on an overloaded fleet they can pin a wrong rate tightly (measured on
the held-out suite: 70B prefill rates on Mooncake at utilisation 1.5, fitted from zero queue-
free TTFT rows, proposed at 1.27-2.12x the truth with intervals of ±2.6-4.5%). So a prefill
rate is identified only when its profile has at least MIN_QUEUE_FREE_ROWS queue-free TTFT rows
(design.queue_free), whatever else informs it (`thin_evidence`); otherwise it is held at
nominal and reported not_identifiable, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimizer.calibration.design import OWN_SHARE
from optimizer.calibration.equations import NormalEquations

# λ² as a fraction of the rows: a relative deviation d from nominal costs as much as a
# relative error of sqrt(PRIOR_WEIGHT) · d on every row, i.e. nothing the data can see.
PRIOR_WEIGHT = 1e-4
Z_95 = 1.959964
# Lowest ratio to nominal a rate or step may take (per-sequence steps may reach 0).
MIN_RATIO = 1e-3
# A value is identified when its 95% interval from the data alone is within ±5% of it: then a
# fitted value is within the 10% the twin is held to (issue #26) with room for the bias the
# linearisation leaves.
MAX_RELATIVE_CI = 0.05
# A kept queue-free TTFT row leaves at most 1 - OWN_SHARE (15%) of its observed TTFT to what
# the replay cannot know, chiefly the decode round in progress at the arrival, whose phase is
# uniform over the round: an error spread evenly over a range has a standard deviation of the
# range / sqrt(12) (4.3%), so pinning the mean to within MAX_RELATIVE_CI at 95% takes
# n >= (Z_95 * 0.15 / sqrt(12) / MAX_RELATIVE_CI)^2 = 2.9 rows: 3. Derived from the two rules
# above, not fitted to the suite. (The worst case, every error at an end of the range, would
# take 9; it would also hold prefill rates the suite recovered from 4-8 queue-free rows, and a
# proposal whose decode terms move while its prefill rate is held can make the held-out p95
# worse: docs/twin.md, step 6.)
MIN_QUEUE_FREE_ROWS = int(
    np.ceil((Z_95 * (1.0 - OWN_SHARE) / np.sqrt(12.0) / MAX_RELATIVE_CI) ** 2)
)
# The null-direction regulariser of the data-only covariance, relative to AᵀA's mean diagonal.
EPSILON = 1e-10


@dataclass(frozen=True)
class Step:
    """The solution of one step: ratios to nominal and their standard deviations (0 where
    held), and the weighted residual sum of squares."""

    z: np.ndarray
    sd: np.ndarray
    rss: float
    # Per parameter: whether it was solved (identified), and the relative half-width of its
    # 95% interval from the data alone (inf where no row informs it; 0 where never free).
    identified: np.ndarray
    relative_ci: np.ndarray
    # Identified, and its interval holds nominal: kept at nominal.
    agrees: np.ndarray
    # Held at nominal because its only evidence is confounded by queueing (`thin_evidence`).
    confounded: np.ndarray | None = None


def thin_evidence(eq: NormalEquations, size: int) -> np.ndarray:
    """Per parameter of θ (design.Layout's order), whether its evidence not confounded by
    queueing is too thin to pin it: a profile's prefill rate with fewer than
    MIN_QUEUE_FREE_ROWS queue-free TTFT rows (module docstring). The decode terms are pinned by
    decode rows, which hold no queue wait; link RTTs and bandwidths only by queue-free TTFT
    rows, at least `min_rows` of them (`solve`)."""
    out = np.zeros(size, dtype=bool)
    out[: len(eq.queue_free)] = eq.queue_free < MIN_QUEUE_FREE_ROWS
    return out


def solve(
    eq: NormalEquations,
    nominal: np.ndarray,
    free: np.ndarray,
    lower: np.ndarray,
    *,
    min_rows: int = 0,
    max_relative_ci: float = np.inf,
    confounded: np.ndarray | None = None,
) -> Step:
    """Solve the free parameters the data identifies (module docstring), others held at 1;
    `confounded` (`thin_evidence`) are held whatever the rows say."""
    held = np.zeros(len(nominal), dtype=bool) if confounded is None else free & confounded
    free = free & ~held & (eq.support >= min_rows)
    relative_ci = np.full(len(nominal), np.inf)
    agrees = np.zeros(len(nominal), dtype=bool)
    while True:
        step = _solve(eq, nominal, free, lower)
        width = _data_only_ci(eq, nominal, step, free)
        relative_ci[free] = width[free]
        worst = int(np.argmax(np.where(free, width, -1.0)))
        if free.any() and width[worst] > max_relative_ci:
            free = free.copy()
            free[worst] = False
            continue
        # Every free value is identified. Those whose interval holds nominal stay there: the
        # data pins them down and finds nothing to change (moving them within their noise
        # only adds error where the nominal fleet was right).
        same = free & (np.abs(step.z - 1.0) <= width * np.abs(step.z))
        if not same.any():
            break
        agrees |= same
        free = free & ~same
    return Step(
        step.z,
        step.sd,
        step.rss,
        identified=free,
        relative_ci=relative_ci,
        agrees=agrees,
        confounded=held,
    )


def _data_only_ci(
    eq: NormalEquations, nominal: np.ndarray, step: Step, free: np.ndarray
) -> np.ndarray:
    """Per free parameter the half-width of its 95% interval relative to its value, from the
    data alone (no prior); inf for a direction the data leaves open."""
    width = np.full(len(nominal), np.inf)
    f = free & (step.sd > 0)
    if not f.any():
        return width
    m = (eq.ata * np.outer(nominal, nominal))[np.ix_(f, f)]
    dof = eq.rows - int(f.sum())
    if dof <= 0:
        return width
    eps = EPSILON * max(float(np.mean(np.diag(m))), 1e-300)
    try:
        cov = np.linalg.inv(m + eps * np.eye(len(m))) * step.rss / dof
    except np.linalg.LinAlgError:
        return width
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    width[f] = Z_95 * sd / np.maximum(np.abs(step.z[f]), 1e-12)
    # Parameters held at their bound by the active set are determined by it, not by the data.
    width[free & (step.sd == 0)] = 0.0
    return width


def _solve(eq: NormalEquations, nominal: np.ndarray, free: np.ndarray, lower: np.ndarray) -> Step:
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
    return Step(
        z=z,
        sd=sd,
        rss=rss,
        identified=f,
        relative_ci=np.zeros_like(z),
        agrees=np.zeros(len(z), dtype=bool),
    )


def interval(z: float, sd: float) -> tuple[float, float]:
    """The 95% interval of a ratio, clipped at 0."""
    return max(z - Z_95 * sd, 0.0), z + Z_95 * sd
