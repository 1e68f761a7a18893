"""A second look at prefill rates the fit held for want of queue-free TTFT rows (issue #26).

A TTFT row is queue-free only when the replay's own prefill is at least design.OWN_SHARE of
the observed TTFT, judged at the current value of the rate. A profile whose true prefill
takes more than 1 / OWN_SHARE (1.18x) the nominal time therefore has no such row at nominal,
however light its traffic, and a fit started there holds exactly the rates that most need
fitting (docs/twin.md, step 6).

So when the first fit's proposal holds such a rate, a second fit starts from nominal and
judges that profile's rows of the first step at a longer prefill time: the factor at which half
of its rows the replay queued for at most QUEUE_SHARE of their TTFT (at least
MIN_QUEUE_FREE_ROWS of them) pass the OWN_SHARE rule, if at most MAX_OWN_FACTOR. On light
traffic those rows are the rate's own evidence: their TTFT is mostly their prefill, so that
factor is close to how much slower the truth is; the smallest factor at which just
MIN_QUEUE_FREE_ROWS of them pass picks outliers, and left a rate with too few informing rows
to move (measured: the twin suite's sovereign fleet, truth seed 27, concentrated at 0.6: 3
rows at 1.06x, the L40S rate never moved; at the median, 1.08x, it was fitted at 16,157
tokens/s against a truth of 16,144). Later steps, and the strict judgement of the proposal,
use the usual rule at the rate's current value, so a rate moved by this fit is proposed only
when rows are queue-free at the value it moved to. The second proposal replaces the first
only when it pins a held rate down and none of the held-out median and p95 errors of TTFT and
E2E (holdout.METRICS) is worse than the first proposal's by more than NOISE, their sum lower:
on overloaded traffic the rows that look short-waited at a longer prefill time can still be
confounded (measured: a loosened rule applied at every step moved an overloaded 70B H100 rate
12% past its truth), and the held-out requests are the only judge of that the calibration
has.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optimizer.calibration.design import OWN_SHARE, QUEUE_SHARE
from optimizer.calibration.equations import Layout, NormalEquations
from optimizer.calibration.fit import MIN_QUEUE_FREE_ROWS, Step
from optimizer.calibration.holdout import METRICS
from optimizer.calibration.routes import Routes
from optimizer.observations import Observations
from optimizer.sim.engine import SimResult
from optimizer.sim.requests import SERVED
from optimizer.topology import Topology

# The longest prefill time, relative to the current value, at which rows are judged: a truth
# 2x slower than its datasheet is beyond what the twin suite draws (1.3x) and a datasheet is
# rarely that wrong; past it a row's TTFT is more likely something else than slow prefill.
MAX_OWN_FACTOR = 2.0
# A held-out error of the second proposal counts as worse than the first's only beyond this
# (absolute, a tenth of a percentage point): a rate moved from its nominal reshuffles which
# decode round each arrival meets, which moves a near-zero median error by hundredths of a
# point either way (measured: the sovereign fleet, truth seed 27, concentrated at 0.6, E2E
# median 0.020% -> 0.026% while TTFT p95 fell 19.4% -> 6.9% and E2E p95 7.9% -> 0.47%). The
# four together must still be lower.
NOISE = 1e-3


def own_factors(
    topology: Topology,
    result: SimResult,
    observations: Observations,
    theta: np.ndarray,
    layout: Layout,
    routes: Routes,
    fit: np.ndarray,
    targets: np.ndarray,
) -> np.ndarray:
    """Per profile the factor its rows' own prefill times are judged at in the second fit's
    first step: for a `targets` profile with at least MIN_QUEUE_FREE_ROWS fitted one-node rows
    with a short wait (QUEUE_SHARE), the factor at which half of them pass the OWN_SHARE rule
    (at least 1), if at most MAX_OWN_FACTOR; 1 everywhere else."""
    t = result.table
    n_p = layout.profiles
    x = theta[:n_p]
    node_of = np.array(t.node)
    served = np.array(t.status) == SERVED
    use = served & observations.measured & (observations.ttft_s > 0) & fit & ~routes.split
    profile_index = {(p.model, p.accelerator): i for i, p in enumerate(topology.profiles)}
    rows = np.flatnonzero(use)
    model_of = np.array(t.model)
    profile = np.array(
        [
            profile_index[
                (topology.models[model_of[i]].name, topology.nodes[node_of[i]].accelerator)
            ]
            for i in rows
        ],
        dtype=np.int64,
    )
    gpus = np.array([topology.nodes[node_of[i]].gpus for i in rows], dtype=np.float64)
    uncached = (np.array(t.prompt, dtype=np.float64) - np.array(t.cached))[rows]
    own = uncached / gpus * x[profile] if rows.size else np.zeros(0)
    t_first = (np.array(t.arrival) + np.array(t.ttft) - np.array(t.half_rtt))[rows]
    t_node = (
        np.array(t.arrival)[rows]
        + np.array(t.half_rtt)[rows]
        + routes.to_fixed[rows]
        + routes.to_coef[rows] @ theta[3 * n_p :]
    )
    ttft = observations.ttft_s[rows]
    short = (t_first - own - t_node) <= QUEUE_SHARE * ttft
    # The factor at which a row's own prefill reaches OWN_SHARE of its TTFT.
    needed = np.divide(OWN_SHARE * ttft, own, out=np.full(rows.size, np.inf), where=own > 0)
    factors = np.ones(n_p)
    for p in np.flatnonzero(targets):
        candidates = np.sort(needed[short & (profile == p)])
        if candidates.size < MIN_QUEUE_FREE_ROWS:
            continue
        factor = max(float(np.median(candidates)), 1.0)
        if factor <= MAX_OWN_FACTOR:
            factors[p] = factor
    return factors


def held_rates(step: Step, eq: NormalEquations, fitted: np.ndarray) -> np.ndarray:
    """Per profile whether a proposal judged by `step` on `eq` holds its prefill rate for want
    of queue-free TTFT rows: held by the rule (fit.thin_evidence), or not pinned down with
    fewer than MIN_QUEUE_FREE_ROWS queue-free rows to pin it."""
    n_p = len(eq.queue_free)
    pinned = step.identified[:n_p] | step.agrees[:n_p]
    held = eq.queue_free < MIN_QUEUE_FREE_ROWS
    if step.confounded is not None:
        held = held | step.confounded[:n_p]
    return fitted & ~pinned & held


def looked_at(
    targets: np.ndarray,
    factors: np.ndarray,
    labels: list[str],
    *,
    first: tuple[Step, dict[str, Any], np.ndarray],
    second: tuple[Step, dict[str, Any]] | None,
) -> dict[str, Any]:
    """The report's `second_look`, from the first proposal's step, held-out errors and
    queue-free rows per profile (the fewest counted) and the second's step and errors: the
    held rates, the factors their rows were judged at, the rates the second proposal pinned
    down, both proposals' held-out errors, and whether the second replaces the first
    (`accepted`), with why."""
    looked: dict[str, Any] = {
        "targets": [labels[i] for i in np.flatnonzero(targets)],
        "own_factors": {labels[i]: round(float(factors[i]), 4) for i in np.flatnonzero(targets)},
        "first_queue_free_rows": {labels[i]: int(first[2][i]) for i in np.flatnonzero(targets)},
    }
    if second is None:
        return looked | {
            "accepted": False,
            "reason": f"no held profile has {MIN_QUEUE_FREE_ROWS} short-waited TTFT rows, half "
            f"of which pass the queue-free rule only at a longer prefill time (up to "
            f"{MAX_OWN_FACTOR}x)",
        }
    freed = targets & second[0].identified[: len(targets)]
    worse = worse_than(first[1], second[1])
    looked |= {
        "freed": [labels[i] for i in np.flatnonzero(freed)],
        "held_out": {"first": first[1], "second": second[1]},
        "worse": worse,
        "accepted": bool(freed.any()) and not worse,
    }
    if not freed.any():
        looked["reason"] = "the second proposal pins none of the held rates either"
    elif worse:
        looked["reason"] = "held-out errors worse than the first proposal's: " + ", ".join(worse)
    else:
        looked["reason"] = "it pins a held rate and no held-out error is worse"
    return looked


def annotate(
    looked: dict[str, Any], labels: list[str], entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The report's profile entries, each prefill rate the accepted second proposal freed
    saying so (`reason`), so that a value moved this way is never mistaken for one the first
    fit pinned down."""
    if not looked["accepted"]:
        return entries
    for label, entry in zip(labels, entries, strict=True):
        if label not in looked["freed"]:
            continue
        value = entry["values"]["prefill_tokens_per_s"]
        value["reason"] = (
            f"held at nominal by the first fit ({looked['first_queue_free_rows'][label]} "
            f"queue-free TTFT rows there); a second fit judged its first step's rows at "
            f"{looked['own_factors'][label]:g}x the nominal prefill time, has "
            f"{entry['ttft_rows']['queue_free']} queue-free TTFT rows at the fitted value, and "
            "no held-out error worse than the first proposal's"
        )
    return entries


def worse_than(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """The held-out metrics (holdout.METRICS) on which `second` is worse than `first` by more
    than NOISE, and "sum" when the four together are not lower."""
    worse = [
        f"{metric} {stat.split('_')[0]}"
        for metric, stat in METRICS
        if second[metric][stat] > first[metric][stat] + NOISE
    ]
    if sum(second[m][s] for m, s in METRICS) >= sum(first[m][s] for m, s in METRICS):
        worse.append("sum")
    return worse
