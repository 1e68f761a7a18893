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
from optimizer.calibration.fit import MIN_RATIO, Step, interval, solve
from optimizer.calibration.replay import (
    all_active,
    fidelity,
    mismatch,
    predicted,
    rebuilt,
    replay,
)
from optimizer.errors import InputFileError
from optimizer.observations import Observations
from optimizer.sim.engine import SimResult
from optimizer.topology import Topology

DEFAULT_MIN_SAMPLES = 50
DEFAULT_MAX_ITERATIONS = 10
DAMPING = 0.5
PATIENCE = 3  # iterations without a better replay before stopping
PAIRS_IN_REPORT = 400  # sampled (observed, predicted) TTFT pairs for the dashboard's plot


class NotEnoughData(InputFileError):
    """No profile had enough observations to fit: nothing is written."""


@dataclass(frozen=True)
class CalibrationResult:
    """The calibrated fleet and the report (docs/twin.md, "Report")."""

    topology: Topology
    report: dict[str, Any]


def _theta(topology: Topology, links: tuple[int, ...]) -> np.ndarray:
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
    nominal_theta = _theta(fleet, links)
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
        "profiles": _profile_entries(
            fleet, calibrated, best_step, profile_samples, fitted_profiles, mean_batch
        ),
        "links": _link_entries(fleet, calibrated, best_step, links, link_samples, min_samples),
        "unfitted_profiles": [labels[i] for i in np.flatnonzero(~fitted_profiles)],
        "fidelity": {"before": before, "after": after},
        "ttft_pairs": _pairs(observations, before_ttft, predicted(result)[0]),
        "wall_seconds": time.perf_counter() - started,
    }
    progress(1.0, "done")
    return CalibrationResult(topology=calibrated, report=report)


def _value(
    nominal: float,
    fitted: float,
    z_sd: tuple[float, float] | None,
    samples: int,
    invert: bool = False,
) -> dict[str, Any]:
    """One fitted value: nominal, fitted, its 95% interval (None when held) and samples."""
    bounds: list[float | None] | None = None
    if z_sd is not None:
        lo, hi = interval(*z_sd)
        z = z_sd[0]
        if invert:  # a rate is 1/θ: its interval is the inverted interval of θ
            bounds = [fitted * z / hi if hi > 0 else None, fitted * z / lo if lo > 0 else None]
        else:
            bounds = [fitted * lo / z, fitted * hi / z] if z > 0 else [0.0, fitted]
    return {"nominal": nominal, "fitted": fitted, "interval": bounds, "samples": samples}


def _profile_entries(
    fleet: Topology,
    calibrated: Topology,
    step: Step | None,
    samples: np.ndarray,
    fitted: np.ndarray,
    mean_batch: np.ndarray,
) -> list[dict[str, Any]]:
    n = len(fleet.profiles)
    entries = []
    for i, (old, new) in enumerate(zip(fleet.profiles, calibrated.profiles, strict=True)):
        use = step if fitted[i] else None
        count = int(samples[i])

        def zsd(j: int, use: Step | None = use) -> tuple[float, float] | None:
            return None if use is None else (float(use.z[j]), float(use.sd[j]))

        entries.append(
            {
                "model": old.model,
                "accelerator": old.accelerator,
                "status": "fitted" if use is not None else "insufficient_data",
                "samples": count,
                # The decode terms are measured around this batch size: step + per_seq * batch
                # is well determined there even when per_seq alone is not (docs/twin.md).
                "mean_decode_batch": round(float(mean_batch[i]), 3),
                "values": {
                    "prefill_tokens_per_s": _value(
                        old.prefill_tokens_per_s, new.prefill_tokens_per_s, zsd(i), count, True
                    ),
                    "decode_step_ms": _value(
                        old.decode_step_ms, new.decode_step_ms, zsd(n + i), count
                    ),
                    "decode_step_ms_per_seq": _value(
                        old.decode_step_ms_per_seq,
                        new.decode_step_ms_per_seq,
                        zsd(2 * n + i),
                        count,
                    ),
                },
            }
        )
    return entries


def _link_entries(
    fleet: Topology,
    calibrated: Topology,
    step: Step | None,
    links: tuple[int, ...],
    samples: np.ndarray,
    min_samples: int,
) -> list[dict[str, Any]]:
    base = 3 * len(fleet.profiles)
    place = {i: j for j, i in enumerate(links)}
    entries = []
    for i, (old, new) in enumerate(zip(fleet.links, calibrated.links, strict=True)):
        j = place.get(i)
        zsd = (
            None
            if j is None or step is None
            else (float(step.z[base + j]), float(step.sd[base + j]))
        )
        entries.append(
            {
                "a": old.a,
                "b": old.b,
                "status": "fitted"
                if zsd is not None
                else ("insufficient_data" if samples[i] < min_samples else "not_fitted"),
                "samples": int(samples[i]),
                "values": {"rtt_ms": _value(old.rtt_ms, new.rtt_ms, zsd, int(samples[i]))},
            }
        )
    return entries


def _pairs(observations: Observations, before: np.ndarray, after: np.ndarray) -> list[list[float]]:
    """Up to PAIRS_IN_REPORT [observed, before, after] TTFTs in ms, evenly over the requests."""
    use = np.flatnonzero(observations.measured & np.isfinite(before) & np.isfinite(after))
    if use.size > PAIRS_IN_REPORT:
        use = use[np.linspace(0, use.size - 1, PAIRS_IN_REPORT).astype(np.int64)]
    return [
        [
            round(float(observations.ttft_s[i]) * 1e3, 3),
            round(float(before[i]) * 1e3, 3),
            round(float(after[i]) * 1e3, 3),
        ]
        for i in use
    ]
