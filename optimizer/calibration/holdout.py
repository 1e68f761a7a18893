"""Held-out observations and the verdict on a proposal (issue #26: a twin that never does harm).

Calibration fits on the first FIT_SHARE of the measured requests in arrival order and judges
the proposal on the rest. The split is by time, not every k-th request or window: requests
close in time share queue episodes and batches, so a held-out request whose neighbours were
fitted would be judged on data the fit has in effect already seen (leakage between adjacent
windows), and a split by time also asks what the twin is used for: predicting what comes next.
Its cost: a node observed only early in the window is judged only on the fit part.

The replay always runs over every request (a held-out request queues behind fitted ones); only
the rows entering the fit (`design.accumulate(fit=...)`) and the errors judged differ.

The verdict: a proposal `improves` when, on the held-out requests, none of the median and p95
absolute relative errors of TTFT and E2E is worse than with the nominal fleet and their sum is
lower; otherwise it is `no_improvement`, and is applied only by an explicit override (the
`calibrate` command's `--override`, the console's `override: true` with a reason).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optimizer.observations import Observations

FIT_SHARE = 0.75
IMPROVED = "improved"
NO_IMPROVEMENT = "no_improvement"
METRICS = (
    ("ttft", "median_abs_rel_error"),
    ("ttft", "p95_abs_rel_error"),
    ("e2e", "median_abs_rel_error"),
    ("e2e", "p95_abs_rel_error"),
)


def split(observations: Observations, fit_share: float = FIT_SHARE) -> np.ndarray:
    """The fit mask: True for the measured requests in the first `fit_share` of the measured
    ones by arrival (observations are in arrival order), False for the held-out rest and for
    unmeasured requests."""
    if not 0.0 < fit_share <= 1.0:
        raise ValueError(f"fit_share must be within (0, 1], got {fit_share}")
    measured = np.flatnonzero(observations.measured)
    cut = int(np.ceil(fit_share * measured.size))
    fit = np.zeros(len(observations), dtype=bool)
    fit[measured[:cut]] = True
    return fit


def verdict(before: dict[str, Any], after: dict[str, Any], held_out: int) -> dict[str, Any]:
    """The verdict of a proposal from the held-out fidelity of the nominal (`before`) and the
    calibrated fleet (`after`), with the metrics that got worse and why."""
    worse = [
        f"{metric} {stat.split('_')[0]}"
        for metric, stat in METRICS
        if after[metric][stat] > before[metric][stat]
    ]
    total_before = sum(before[m][s] for m, s in METRICS)
    total_after = sum(after[m][s] for m, s in METRICS)
    if held_out == 0:
        reason = "no measured request was held out, so nothing shows the proposal helps"
    elif worse:
        reason = "held-out errors got worse: " + ", ".join(worse)
    elif total_after >= total_before:
        reason = "no held-out error got better"
    else:
        reason = ""
    return {
        "verdict": NO_IMPROVEMENT if reason else IMPROVED,
        "reason": reason or "no held-out error got worse and together they got better",
        "worse": worse,
        "held_out": held_out,
    }
