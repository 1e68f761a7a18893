"""`calibrate`: fit a topology's profiles (and link RTTs) to observations, with a report.

Iterate: replay the observations on their recorded nodes with the current parameters, read
the linear system off the replay (`design`), solve it (`fit`), move toward the solution (a
damped step), until the parameters move by less than `tol` or PATIENCE iterates in a row
bring no better replay. The iterate whose replay matches the observations best (mean
relative error of TTFT plus E2E, `replay.mismatch`) is the result, so the calibrated fleet is
never worse than the nominal one on the data it was fitted to.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from optimizer.calibration.design import (
    Layout,
    Routes,
    accumulate,
    profile_of_request,
)
from optimizer.calibration.fit import MIN_RATIO, Step, solve
from optimizer.calibration.replay import (
    all_active,
    fidelity,
    mismatch,
    predicted,
    rebuilt,
    replay,
)
from optimizer.calibration.report import link_entries, profile_entries, ttft_pairs
from optimizer.errors import InputFileError
from optimizer.observations import Observations
from optimizer.sim.engine import SimResult
from optimizer.topology import Topology

DEFAULT_MIN_SAMPLES = 50
DEFAULT_MAX_ITERATIONS = 10
DAMPING = 0.5
PATIENCE = 3  # iterations without a better replay before stopping


class NotEnoughData(InputFileError):
    """No profile had enough observations to fit: nothing is written."""


@dataclass(frozen=True)
class CalibrationResult:
    """The calibrated fleet and the report (docs/twin.md, "Report")."""

    topology: Topology
    report: dict[str, Any]


def parameters(topology: Topology, links: tuple[int, ...]) -> np.ndarray:
    """θ of a fleet (design.Layout's order): 1/prefill rate, decode step and per-sequence
    step per profile, in seconds, then the RTT of each link in `links`."""
    p = topology.profiles
    return np.concatenate(
        [
            [1.0 / pr.prefill_tokens_per_s for pr in p],
            [pr.decode_step_ms / 1000.0 for pr in p],
            [pr.decode_step_ms_per_seq / 1000.0 for pr in p],
            [topology.links[i].rtt_ms / 1000.0 for i in links],
        ]
    )


def with_parameters(topology: Topology, theta: np.ndarray, links: tuple[int, ...]) -> Topology:
    """`topology` with profile speeds and fitted link RTTs taken from θ (rounded for the file)."""
    n = len(topology.profiles)
    profiles = tuple(
        pr.model_copy(
            update={
                "prefill_tokens_per_s": round(1.0 / theta[i], 2),
                "decode_step_ms": round(theta[n + i] * 1000.0, 5),
                "decode_step_ms_per_seq": round(theta[2 * n + i] * 1000.0, 6),
            }
        )
        for i, pr in enumerate(topology.profiles)
    )
    new_links = list(topology.links)
    for j, i in enumerate(links):
        new_links[i] = new_links[i].model_copy(update={"rtt_ms": round(theta[3 * n + j] * 1e3, 4)})
    return rebuilt(topology, profiles=profiles, links=tuple(new_links))


def _link_samples(topology: Topology, observations: Observations) -> np.ndarray:
    index = {frozenset((lk.a, lk.b)): i for i, lk in enumerate(topology.links)}
    counts = np.zeros(len(topology.links), dtype=np.int64)
    for request, node, measured in zip(
        observations.requests, observations.node, observations.measured, strict=True
    ):
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
    progress: Callable[[float, str], None] = lambda fraction, message: None,
) -> CalibrationResult:
    """Fit `nominal` to `observations`; raise NotEnoughData naming the profiles that could not
    be fitted when none could."""
    started = time.perf_counter()
    fleet = all_active(nominal)
    profile_of = profile_of_request(fleet, observations)
    measured = observations.measured
    profile_samples = np.bincount(
        profile_of[measured & (profile_of >= 0)], minlength=len(fleet.profiles)
    )
    link_samples = _link_samples(fleet, observations)
    # Link RTTs are fitted only on request (docs/twin.md): an RTT and a queue wait both add to
    # TTFT, and early iterates, whose waits are too short, push the difference into RTTs.
    links = tuple(int(i) for i in np.flatnonzero(link_samples >= min_samples)) if fit_links else ()
    layout = Layout(profiles=len(fleet.profiles), links=links)
    fitted_profiles = profile_samples >= min_samples
    labels = [f"{p.model}@{p.accelerator}" for p in fleet.profiles]
    if not fitted_profiles.any():
        raise NotEnoughData(
            observations.path,
            [
                f"{observations.path}: too little data to calibrate: no profile has "
                f"{min_samples} measured requests ("
                + ", ".join(f"{labels[i]}: {profile_samples[i]}" for i in range(len(labels)))
                + "); nothing was changed"
            ],
        )
    free = np.concatenate([np.tile(fitted_profiles, 3), np.ones(len(links), dtype=bool)])
    lower = np.full(layout.size, MIN_RATIO)
    lower[2 * layout.profiles : 3 * layout.profiles] = 0.0
    nominal_theta = parameters(fleet, links)
    routes = Routes(fleet, observations, layout)

    theta = nominal_theta.copy()
    result = replay(fleet, observations)
    before = fidelity(result, observations)
    before_ttft = predicted(result)[0]
    best: tuple[float, np.ndarray, SimResult, Step | None, np.ndarray] = (
        mismatch(result, observations),
        theta,
        result,
        None,
        np.zeros(layout.profiles),
    )
    step: Step | None = None
    iterations = stale = 0
    for iterations in range(1, max_iterations + 1):
        progress(iterations / (max_iterations + 1), f"iteration {iterations}")
        eq = accumulate(fleet, result, observations, theta, layout, routes)
        step = solve(eq, nominal_theta, free, lower)
        # A full first step, then half steps: the replay's waits and batch sizes respond to
        # the parameters, and a full step each time makes the weakly determined per-sequence
        # step and the fixed step trade places from one iterate to the next.
        new = theta + (1.0 if iterations == 1 else DAMPING) * (nominal_theta * step.z - theta)
        change = float(np.max(np.abs(new / theta - 1.0)))
        theta = new
        result = replay(with_parameters(fleet, theta, links), observations)
        score = mismatch(result, observations)
        if score < best[0]:
            best, stale = (score, theta, result, step, eq.mean_batch()), 0
        else:
            stale += 1
        if change < tol or stale >= PATIENCE:
            break
    _, theta, result, best_step, mean_batch = best
    after = fidelity(result, observations)
    # Intervals come from the step that made the best iterate (or the last step when the
    # nominal replay stayed best: the values are then the nominal ones).
    best_step = best_step or step
    fitted_file = with_parameters(nominal, theta, links)
    # Profiles without enough data keep their nominal entries exactly (no float round trip).
    calibrated = rebuilt(
        fitted_file,
        profiles=tuple(
            new if fitted_profiles[i] else old
            for i, (old, new) in enumerate(zip(nominal.profiles, fitted_file.profiles, strict=True))
        ),
    )
    report = {
        "observations": observations.path,
        "requests": len(observations),
        "measured": int(measured.sum()),
        "min_samples": min_samples,
        "iterations": iterations,
        "profiles": profile_entries(
            fleet, calibrated, best_step, profile_samples, fitted_profiles, mean_batch
        ),
        "links": link_entries(fleet, calibrated, best_step, links, link_samples, min_samples),
        "unfitted_profiles": [labels[i] for i in np.flatnonzero(~fitted_profiles)],
        "fidelity": {"before": before, "after": after},
        "ttft_pairs": ttft_pairs(observations, before_ttft, predicted(result)[0]),
        "wall_seconds": time.perf_counter() - started,
    }
    progress(1.0, "done")
    return CalibrationResult(topology=calibrated, report=report)
