"""The rule a learned-policy candidate must pass on the validation set to replace the shipped
policy (docs/learned-policy.md, "Choosing between candidates"), fixed before any candidate is
measured so that the set chooses and nobody's judgement of a close call does.

Against the baseline (the shipped policy) on the same cells, a candidate must:

1. have a higher mean gap to the best heuristic over all cells;
2. stay within `LOAD_SLACK_PT` (0.25 pt) of the baseline at utilisation 0.5 and at 1, so a gain at
   heavy load cannot pay for a loss where the fleet is not saturated;
3. have a mean TTFT ratio to the best heuristic at most `TTFT_SLACK` (1.05) times the
   baseline's (issue #26: at light load the learned policy's TTFT was already its weakness);
4. be no worse than the baseline on the hand-written fleets: the generated fleets favour
   latency-first and the held-out suite's hand-written fleets do not, and on the one candidate
   whose suite run is known against this group (issue #26), the group and the suite agreed
   where the generated fleets did not.
"""

from __future__ import annotations

# group name -> policy -> (mean gap to the best heuristic in points, geometric mean TTFT ratio)
GroupMeans = dict[str, dict[str, tuple[float, float]]]

LOAD_SLACK_PT = 0.25
TTFT_SLACK = 1.05
LIGHT_GROUPS = ("U 0.5", "U 1")
HAND = "hand-written fleets"


def verdict(means: GroupMeans, candidate: str, baseline: str) -> list[str]:
    """Why `candidate` fails the rule against `baseline`; empty when it passes."""
    why = []
    gap, ratio = means["all"][candidate]
    base_gap, base_ratio = means["all"][baseline]
    if gap <= base_gap:
        why.append(f"mean gap {gap:+.2f} pt is not above the baseline's {base_gap:+.2f}")
    for group in LIGHT_GROUPS:
        if group in means:
            own, base = means[group][candidate][0], means[group][baseline][0]
            if own < base - LOAD_SLACK_PT:
                why.append(f"{group}: {own:+.2f} pt, more than {LOAD_SLACK_PT} below {base:+.2f}")
    if ratio > TTFT_SLACK * base_ratio:
        why.append(f"mean TTFT ratio {ratio:.2f}x is above {TTFT_SLACK} x {base_ratio:.2f}x")
    if HAND in means and means[HAND][candidate][0] < means[HAND][baseline][0]:
        own, base = means[HAND][candidate][0], means[HAND][baseline][0]
        why.append(f"{HAND}: {own:+.2f} pt, below the baseline's {base:+.2f}")
    return why
