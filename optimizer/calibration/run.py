"""`calibrate`: fit a topology's profiles (and link RTTs) to observations, with a report.

In phases. Set up: the first FIT_SHARE of the measured requests (by arrival) are fitted, the
rest held out to judge the proposal (`holdout`); a profile is fitted when it has `min_samples`
fitted requests, a link's RTT only on request, a link's bandwidth when enough split requests
crossed it. First proposal: the fit loop from nominal keeps what the data pins down
(propose.py). Second look: a prefill rate that proposal holds for want of queue-free TTFT rows
gets a second fit (second_look.py), kept only when no held-out error is worse. Then the
calibrated fleet (values that did not move keep their nominal entries exactly), and the report,
whose verdict says whether the proposal beats the nominal fleet on the held-out requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from optimizer.calibration.design import profile_of_request
from optimizer.calibration.equations import Layout
from optimizer.calibration.holdout import FIT_SHARE, split, verdict
from optimizer.calibration.propose import FitLoop, Proposal
from optimizer.calibration.replay import all_active, fidelity, predicted, rebuilt
from optimizer.calibration.report import (
    kept_bandwidths,
    link_entries,
    profile_entries,
    ttft_pairs,
)
from optimizer.calibration.second_look import annotate, held_rates, looked_at, own_factors
from optimizer.calibration.split_rows import split_samples
from optimizer.calibration.theta import kept, with_parameters
from optimizer.errors import InputFileError
from optimizer.observations import Observations
from optimizer.topology import Topology

DEFAULT_MIN_SAMPLES = 50
DEFAULT_MAX_ITERATIONS = 10


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
    loop = FitLoop(
        fleet,
        observations,
        fit,
        layout,
        fitted_profiles,
        min_samples=min_samples,
        max_iterations=max_iterations,
        tol=tol,
        progress=progress,
    )
    start = loop.start
    before_ttft = predicted(start)[0]

    # The first proposal, then a second look at the prefill rates it held; every iteration
    # of both is counted, since both were run.
    chosen = loop.propose(None)
    iterations = chosen.iterations
    second, looked = _second_look(loop, chosen, held_out, labels)
    if second is not None:
        iterations += second.iterations
        if looked["accepted"]:
            chosen = second
    # The proposal, judged on the held-out requests against the nominal replay.
    result, report_step, report_eq = chosen.result, chosen.step, chosen.eq
    calibrated = _calibrated(nominal, chosen.theta, report_step.identified, layout)
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


def _second_look(
    loop: FitLoop, first: Proposal, held_out: np.ndarray, labels: list[str]
) -> tuple[Proposal | None, dict[str, Any]]:
    """A second proposal for the prefill rates `first` holds for want of queue-free TTFT rows,
    and what was found (second_look.py); None when there was nothing to look at."""
    targets = held_rates(first.step, first.eq, loop.fitted_profiles)
    if not targets.any():
        return None, {"targets": [], "accepted": False, "reason": "no prefill rate held"}
    observations = loop.observations
    factors = own_factors(
        loop.fleet,
        loop.start,
        observations,
        loop.nominal_theta,
        loop.layout,
        loop.routes,
        loop.fit,
        targets,
    )
    second = loop.propose(factors) if (factors > 1.0).any() else None
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


def _calibrated(
    nominal: Topology, theta: np.ndarray, identified: np.ndarray, layout: Layout
) -> Topology:
    """`nominal` with the values `identified` at `theta`; every other value keeps its nominal
    entry exactly (no float round trip), so an unchanged profile or link reads as unchanged."""
    links, transfers = layout.links, layout.transfers
    fitted_file = with_parameters(nominal, theta, links, transfers)
    return rebuilt(
        fitted_file,
        profiles=tuple(
            kept(old, new, identified, i, layout.profiles)
            for i, (old, new) in enumerate(zip(nominal.profiles, fitted_file.profiles, strict=True))
        ),
        links=kept_bandwidths(
            nominal, fitted_file, identified[layout.size - len(transfers) :], transfers
        ),
    )
