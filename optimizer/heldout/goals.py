"""The held-out suite's judgement of one cell (a fleet, a trace, a load): which heuristic is the
bar, what regime the load is in, and whether a learned policy meets issue #26's goals there.

Everything here works on per-policy summaries (means over the seeds) and is pure, so the rules
can be tested on hand-made numbers:

- The **best heuristic** of a cell has the highest mean SLO attainment over the seeds; a tie
  (equal to 1e-9) goes to the lower mean TTFT, then to the name, so the choice is stable.
- The **regime**: *heavy* when the best heuristic's attainment is below 85% of the oracle's on
  the same arrivals (issue #18's definition, kept by issue #26); otherwise *light* at a
  utilisation of at most 0.3 and *moderate* above it.
- The **goals** (issue #26, "Done when"): at light and moderate load the zero-shot policy is at
  most 0.5 point below the best heuristic with a mean TTFT at most 10% above its; at heavy load
  it is at least 3 points above with a mean TTFT no higher. The fine-tuned policy is at least 5
  points above at heavy load with a lower p95 TTFT; the issue sets it no bar at light and
  moderate load, where the suite holds it to the zero-shot bar (a fine-tune must do no harm,
  issue #26 item 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Regime = Literal["light", "moderate", "heavy"]
Role = Literal["zero-shot", "fine-tuned"]

HEAVY_SHARE_OF_ORACLE = 0.85
LIGHT_MAX_UTILISATION = 0.3
WITHIN_PT = 0.5
MEAN_TTFT_SLACK = 1.10
ZERO_SHOT_HEAVY_PT = 3.0
FINE_TUNED_HEAVY_PT = 5.0
_TIE = 1e-9
# Floating point must not fail a policy exactly at a bar: 100 * (0.945 - 0.95) is -0.5000000004.
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Summary:
    """A policy's means over the seeds of one cell: attainment as a fraction, times in ms."""

    slo_attainment: float
    ttft_mean_ms: float
    ttft_p95_ms: float
    cost_per_1k_requests: float


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a learned policy meets its goal in one cell, and by how much."""

    passed: bool
    bar: str
    """The goal in words, e.g. '>= +3.0 pt, mean TTFT <= best'."""
    margin_pt: float
    """Attainment minus the best heuristic's, in points."""
    ttft_mean_ratio: float
    """Mean TTFT over the best heuristic's (inf when the heuristic's is 0 and ours is not)."""
    ttft_p95_ratio: float


def best_heuristic(summaries: dict[str, Summary]) -> str:
    """The heuristic with the highest mean attainment; ties: lower mean TTFT, then name."""
    if not summaries:
        raise ValueError("a cell needs at least one heuristic to set the bar")
    top = max(s.slo_attainment for s in summaries.values())
    tied = [name for name, s in summaries.items() if s.slo_attainment >= top - _TIE]
    return min(tied, key=lambda name: (summaries[name].ttft_mean_ms, name))


def regime(best_attainment: float, oracle_attainment: float, utilisation: float) -> Regime:
    """The cell's load regime from the best heuristic's and the oracle's mean attainment."""
    if best_attainment < HEAVY_SHARE_OF_ORACLE * oracle_attainment:
        return "heavy"
    return "light" if utilisation <= LIGHT_MAX_UTILISATION else "moderate"


def _ratio(ours: float, theirs: float) -> float:
    if theirs > 0:
        return ours / theirs
    return 1.0 if ours <= 0 else float("inf")


def judge(role: Role, cell_regime: Regime, ours: Summary, best: Summary) -> Verdict:
    """`ours` (the zero-shot or fine-tuned policy) against the cell's best heuristic."""
    margin = 100.0 * (ours.slo_attainment - best.slo_attainment)
    mean_ratio = _ratio(ours.ttft_mean_ms, best.ttft_mean_ms)
    p95_ratio = _ratio(ours.ttft_p95_ms, best.ttft_p95_ms)
    if cell_regime != "heavy":
        passed = margin >= -WITHIN_PT - _EPS and mean_ratio <= MEAN_TTFT_SLACK + _EPS
        bar = f">= -{WITHIN_PT:g} pt, mean TTFT <= {MEAN_TTFT_SLACK:g}x best"
    elif role == "zero-shot":
        passed = margin >= ZERO_SHOT_HEAVY_PT - _EPS and mean_ratio <= 1.0 + _EPS
        bar = f">= +{ZERO_SHOT_HEAVY_PT:g} pt, mean TTFT <= best"
    else:
        passed = margin >= FINE_TUNED_HEAVY_PT - _EPS and p95_ratio < 1.0
        bar = f">= +{FINE_TUNED_HEAVY_PT:g} pt, p95 TTFT < best"
    return Verdict(passed, bar, margin, mean_ratio, p95_ratio)
