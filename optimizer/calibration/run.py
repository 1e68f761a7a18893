"""`calibrate`: fit a topology's profiles (and link RTTs) to observations, with a report.

The first FIT_SHARE of the measured requests (by arrival) are fitted, the rest held out to
judge the proposal (`holdout`). Iterate: replay the observations on their recorded nodes with
the current parameters, read the linear system off the replay over the fitted requests
(`design`: queue-dominated TTFT rows left out), solve it for the values the data identifies
(`fit`), move toward the solution (a damped step), until the parameters move by less than
`tol` or PATIENCE iterates in a row bring no better replay. The iterate whose replay matches
the fitted requests best (mean relative error of TTFT plus E2E, `replay.mismatch`) is the
result, with every value its step did not identify put back to nominal. A prefill rate that
proposal holds for want of queue-free TTFT rows gets a second fit (`second_look`), kept only
when no held-out error is worse. The report's verdict says whether the proposal beats the
nominal fleet on the held-out requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from optimizer.calibration.design import Routes, accumulate, profile_of_request
from optimizer.calibration.equations import Layout, NormalEquations
from optimizer.calibration.fit import MAX_RELATIVE_CI, MIN_RATIO, Step, solve, thin_evidence
from optimizer.calibration.holdout import FIT_SHARE, split, verdict
from optimizer.calibration.replay import (
    all_active,
    fidelity,
    mismatch,
    predicted,
    rebuilt,
    replay,
)
from optimizer.calibration.report import (
    kept_bandwidths,
    link_entries,
    profile_entries,
    ttft_pairs,
)
from optimizer.calibration.second_look import annotate, held_rates, looked_at, own_factors
from optimizer.calibration.split_rows import split_samples
from optimizer.calibration.theta import kept, parameters, with_parameters
from optimizer.errors import InputFileError
from optimizer.observations import Observations
from optimizer.sim.engine import SimResult
from optimizer.topology import Topology

DEFAULT_MIN_SAMPLES = 50
DEFAULT_MAX_ITERATIONS = 10
DAMPING = 0.5
# While iterating, a value moves when its interval is within ±EXPLORE_CI: far from the truth
# the replay's errors are large and every interval wide, and the strict MAX_RELATIVE_CI would
# hold everything at nominal on overloaded data, so the fit never got near the truth. What
# the proposal moves is decided at the best iterate, strictly.
EXPLORE_CI = 0.25
PATIENCE = 3  # iterations without a better replay before stopping


class NotEnoughData(InputFileError):
    """No profile had enough observations to fit: nothing is written."""


@dataclass(frozen=True)
class CalibrationResult:
    """The calibrated fleet and the report (docs/twin.md, "Report")."""

    topology: Topology
    report: dict[str, Any]


def _link_samples(topology: Topology, observations: Observations, fit: np.ndarray) -> np.ndarray:
    index = {frozenset((lk.a, lk.b)): i for i, lk in enumerate(topology.links)}
    counts = np.zeros(len(topology.links), dtype=np.int64)
    for request, node, measured in zip(observations.requests, observations.node, fit, strict=True):
        if node is None or not measured:
            continue
        site = topology.node_by_name[node].site
        if site != request.source_site:
            counts[index[frozenset((request.source_site, site))]] += 1
    return counts


@dataclass
class _Proposal:
    """A fit's proposal: θ with every value not pinned down back at nominal, its replay, the
    strict step that judged it, the equations it was judged on, the queue-free rows counted
    at the best iterate of the fit that moved it, and the iterations it took."""

    theta: np.ndarray
    result: SimResult
    step: Step
    eq: NormalEquations
    queue_free_judged: np.ndarray
    iterations: int


@dataclass
class _Iterate:
    """One iterate of the fit: its score on the fitted requests, θ, its replay, and the step
    and equations that led to it (None for the nominal start)."""

    score: float
    theta: np.ndarray
    result: SimResult
    step: Step | None = None
    eq: NormalEquations | None = None


def calibrate(
    nominal: Topology,
    observations: Observations,
    *,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    tol: float = 1e-3,
    fit_links: bool = False,
    fit_share: float = FIT_SHARE,
    progress: Callable[[float, str], None] = lambda fraction, message: None,
) -> CalibrationResult:
    """Fit `nominal` to the first `fit_share` of `observations` and judge the proposal on the
    rest (`holdout`); raise NotEnoughData naming the profiles that could not be fitted when
    none could."""
    started = time.perf_counter()
    fleet = all_active(nominal)
    profile_of = profile_of_request(fleet, observations)
    fit = split(observations, fit_share)
    held_out = observations.measured & ~fit
    prefill_samples, transfer_samples = split_samples(fleet, observations, fit)
    profile_samples = (
        np.bincount(profile_of[fit & (profile_of >= 0)], minlength=len(fleet.profiles))
        + prefill_samples
    )
    link_samples = _link_samples(fleet, observations, fit)
    # Link RTTs are fitted only on request (docs/twin.md): an RTT and a queue wait both add to
    # TTFT, and early iterates, whose waits are too short, push the difference into RTTs.
    links = tuple(int(i) for i in np.flatnonzero(link_samples >= min_samples)) if fit_links else ()
    # A split request's KV crosses its link at the link's bandwidth (issue #30), most of its
    # TTFT on a long prompt: fitted wherever enough split requests crossed a link.
    transfers = tuple(int(i) for i in np.flatnonzero(transfer_samples >= min_samples))
    layout = Layout(profiles=len(fleet.profiles), links=links, transfers=transfers)
    fitted_profiles = profile_samples >= min_samples
    labels = [f"{p.model}@{p.accelerator}" for p in fleet.profiles]
    if not fitted_profiles.any():
        raise NotEnoughData(
            observations.path,
            [
                f"{observations.path}: too little data to calibrate: no profile has "
                f"{min_samples} measured requests to fit ("
                + ", ".join(f"{labels[i]}: {profile_samples[i]}" for i in range(len(labels)))
                + "); nothing was changed"
            ],
        )
    free = np.concatenate(
        [np.tile(fitted_profiles, 3), np.ones(len(links) + len(transfers), dtype=bool)]
    )
    lower = np.full(layout.size, MIN_RATIO)
    lower[2 * layout.profiles : 3 * layout.profiles] = 0.0
    nominal_theta = parameters(fleet, links, transfers)
    routes = Routes(fleet, observations, layout)

    start = replay(fleet, observations)
    before_ttft = predicted(start)[0]
    nominal_start = _Iterate(mismatch(start, observations, fit), nominal_theta.copy(), start)

    def explore(
        free: np.ndarray, held_prefill: np.ndarray | None, own_scale: np.ndarray | None
    ) -> tuple[_Iterate, int]:
        """Iterate from nominal over the `free` values; the best iterate and the count. The
        first step judges rows' own prefill times at `own_scale` (second_look)."""
        theta, result, best = nominal_theta.copy(), start, nominal_start
        iterations = stale = 0
        for iterations in range(1, max_iterations + 1):
            progress(iterations / (max_iterations + 2), f"iteration {iterations}")
            eq = accumulate(
                fleet,
                result,
                observations,
                theta,
                layout,
                routes,
                fit,
                held_prefill=held_prefill,
                own_scale=own_scale if iterations == 1 else None,
            )
            step = solve(
                eq, nominal_theta, free, lower, min_rows=min_samples, max_relative_ci=EXPLORE_CI
            )
            # A full first step, then half steps: the replay's waits and batch sizes respond
            # to the parameters, and a full step each time makes the weakly determined
            # per-sequence step and the fixed step trade places from one iterate to the next.
            new = theta + (1.0 if iterations == 1 else DAMPING) * (nominal_theta * step.z - theta)
            # Relative to the larger of the two: a per-sequence step may sit at its bound, 0.
            change = float(np.max(np.abs(new - theta) / np.maximum(np.abs(theta), np.abs(new))))
            theta = new
            result = replay(with_parameters(fleet, theta, links, transfers), observations)
            score = mismatch(result, observations, fit)
            if score < best.score:
                best, stale = _Iterate(score, theta, result, step, eq), 0
            else:
                stale += 1
            if change < tol or stale >= PATIENCE:
                break
        return best, iterations

    def propose(own_scale: np.ndarray | None) -> _Proposal:
        """Explore, then keep only what the data at the best iterate pins down."""
        best, iterations = explore(free, None, own_scale)
        # The proposal moves only what the data at the best iterate pins down (fit.py,
        # "Identifiability", at MAX_RELATIVE_CI); everything else goes back to nominal exactly.
        progress((max_iterations + 1) / (max_iterations + 2), "judging what the data pins down")
        report_eq = accumulate(fleet, best.result, observations, best.theta, layout, routes, fit)
        # Strictly, too, a value whose only evidence is confounded by queueing is held (fit.py,
        # MIN_QUEUE_FREE_ROWS). Not while iterating: far from the truth the replay's own
        # prefill times are off, few rows look queue-free, and a rate held there could never
        # get near it. When the best iterate holds such a rate, the rest is fitted again from
        # nominal with it held there and the decode rows its prefills fill left out
        # (design.accumulate): the values fitted beside a wrongly moved rate had absorbed its
        # error (measured on the twin suite: a 70B decode step proposed 1.57x its truth).
        confounded = thin_evidence(report_eq, layout.size)
        held_prefill = confounded[: layout.profiles] & fitted_profiles
        queue_free_judged = report_eq.queue_free.copy()
        if held_prefill.any():
            best, more = explore(free & ~confounded, held_prefill, own_scale)
            iterations += more
            report_eq = accumulate(
                fleet,
                best.result,
                observations,
                best.theta,
                layout,
                routes,
                fit,
                held_prefill=held_prefill,
            )
        report_step = solve(
            report_eq,
            nominal_theta,
            free,
            lower,
            min_rows=min_samples,
            max_relative_ci=MAX_RELATIVE_CI,
            confounded=confounded,
        )
        # When the nominal replay stayed best, nothing moves: a value the data there places
        # away from nominal, which no iterate could make fit better, is not one it pins down.
        identified = report_step.identified & (best.step is not None)
        if best.step is None:
            report_step = replace(report_step, identified=identified)
        theta = np.where(identified, best.theta, nominal_theta)
        result = best.result
        if not np.array_equal(theta, best.theta):
            result = replay(with_parameters(fleet, theta, links, transfers), observations)
        return _Proposal(theta, result, report_step, report_eq, queue_free_judged, iterations)

    def second_look(first: _Proposal) -> tuple[_Proposal | None, dict[str, Any]]:
        """A second proposal for the prefill rates `first` holds for want of queue-free TTFT
        rows, and what was found (second_look.py); None when there was nothing to look at."""
        targets = held_rates(first.step, first.eq, fitted_profiles)
        if not targets.any():
            return None, {"targets": [], "accepted": False, "reason": "no prefill rate held"}
        factors = own_factors(
            fleet, start, observations, nominal_theta, layout, routes, fit, targets
        )
        second = propose(factors) if (factors > 1.0).any() else None
        return second, looked_at(
            targets,
            factors,
            labels,
            first=(
                first.step,
                fidelity(first.result, observations, held_out),
                np.minimum(first.queue_free_judged, first.eq.queue_free),
            ),
            second=None
            if second is None
            else (second.step, fidelity(second.result, observations, held_out)),
        )

    chosen = propose(None)
    iterations = chosen.iterations
    second, looked = second_look(chosen)
    if second is not None:
        iterations += second.iterations
        if looked["accepted"]:
            chosen = second
    theta, result = chosen.theta, chosen.result
    identified, report_step, report_eq = chosen.step.identified, chosen.step, chosen.eq
    fitted_file = with_parameters(nominal, theta, links, transfers)
    # Values that did not move keep their nominal entries exactly (no float round trip).
    calibrated = rebuilt(
        fitted_file,
        profiles=tuple(
            kept(old, new, identified, i, layout.profiles)
            for i, (old, new) in enumerate(zip(nominal.profiles, fitted_file.profiles, strict=True))
        ),
        links=kept_bandwidths(
            nominal, fitted_file, identified[layout.size - len(transfers) :], transfers
        ),
    )
    before = fidelity(start, observations, held_out)
    after = fidelity(result, observations, held_out)
    report = {
        "observations": observations.path,
        "requests": len(observations),
        "measured": int(observations.measured.sum()),
        "fitted_requests": int(fit.sum()),
        "held_out_requests": int(held_out.sum()),
        "min_samples": min_samples,
        "iterations": iterations,
        "profiles": annotate(
            looked,
            labels,
            profile_entries(
                fleet,
                calibrated,
                report_step,
                report_eq,
                profile_samples,
                fitted_profiles,
                queue_free_judged=chosen.queue_free_judged,
            ),
        ),
        "links": link_entries(
            fleet,
            calibrated,
            report_step,
            links,
            link_samples,
            min_samples,
            transfers=(transfers, transfer_samples),
        ),
        "unfitted_profiles": [labels[i] for i in np.flatnonzero(~fitted_profiles)],
        "fidelity": {"before": before, "after": after},
        "fidelity_in_sample": {
            "before": fidelity(start, observations, fit),
            "after": fidelity(result, observations, fit),
        },
        "verdict": verdict(before, after, int(held_out.sum())),
        "second_look": looked,
        "ttft_pairs": ttft_pairs(observations, before_ttft, predicted(result)[0], held_out),
        "wall_seconds": time.perf_counter() - started,
    }
    progress(1.0, "done")
    return CalibrationResult(topology=calibrated, report=report)
