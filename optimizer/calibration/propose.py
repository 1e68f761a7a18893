"""The fit loop: from nominal, iterate toward what the observations say, then propose only what
the data pins down (docs/twin.md, "Method", steps 4 to 7).

`FitLoop` holds what every fit of one calibration shares: the fleet, the observations, which
of them are fitted, θ's layout, the nominal θ and its bounds, the replay at nominal. `explore`
iterates from nominal: replay the observations on their recorded nodes with the current θ,
read the linear system off the replay over the fitted requests (`design`: queue-dominated TTFT
rows left out), solve it for the values the data identifies (`fit`), move toward the solution
(a damped step), until θ moves by less than `tol` or PATIENCE iterates in a row bring no better
replay. `propose` keeps the iterate whose replay matches the fitted requests best (mean
relative error of TTFT plus E2E, `replay.mismatch`), with every value its strict step did not
identify put back to nominal. A second look (second_look.py) is one more `propose`, its first
step judging rows' own prefill times at longer ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from optimizer.calibration.design import Routes, accumulate
from optimizer.calibration.equations import Layout, NormalEquations
from optimizer.calibration.fit import MAX_RELATIVE_CI, MIN_RATIO, Step, solve, thin_evidence
from optimizer.calibration.replay import mismatch, replay
from optimizer.calibration.theta import parameters, with_parameters
from optimizer.observations import Observations
from optimizer.sim.engine import SimResult
from optimizer.topology import Topology

DAMPING = 0.5
# While iterating, a value moves when its interval is within ±EXPLORE_CI: far from the truth
# the replay's errors are large and every interval wide, and the strict MAX_RELATIVE_CI would
# hold everything at nominal on overloaded data, so the fit never got near the truth. What
# the proposal moves is decided at the best iterate, strictly.
EXPLORE_CI = 0.25
PATIENCE = 3  # iterations without a better replay before stopping


@dataclass
class Proposal:
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


@dataclass
class FitLoop:
    """The fixed inputs of one calibration's fits. `fit` marks the fitted requests,
    `fitted_profiles` the profiles with enough of them (only their values are free; every
    link in `layout` is); `progress` is told of each iteration."""

    fleet: Topology
    observations: Observations
    fit: np.ndarray
    layout: Layout
    fitted_profiles: np.ndarray
    min_samples: int
    max_iterations: int
    tol: float
    progress: Callable[[float, str], None]
    free: np.ndarray = field(init=False)
    lower: np.ndarray = field(init=False)
    nominal_theta: np.ndarray = field(init=False)
    routes: Routes = field(init=False)
    start: SimResult = field(init=False)  # the replay at nominal, every fit's first iterate
    nominal_start: _Iterate = field(init=False)

    def __post_init__(self) -> None:
        layout = self.layout
        extra = len(layout.links) + len(layout.transfers)
        self.free = np.concatenate([np.tile(self.fitted_profiles, 3), np.ones(extra, dtype=bool)])
        # Per-sequence decode steps (the third block) may reach 0; every other value keeps a
        # floor of MIN_RATIO of nominal (fit.py).
        self.lower = np.full(layout.size, MIN_RATIO)
        self.lower[2 * layout.profiles : 3 * layout.profiles] = 0.0
        self.nominal_theta = parameters(self.fleet, layout.links, layout.transfers)
        self.routes = Routes(self.fleet, self.observations, layout)
        self.start = replay(self.fleet, self.observations)
        self.nominal_start = _Iterate(
            mismatch(self.start, self.observations, self.fit), self.nominal_theta.copy(), self.start
        )

    def _replay(self, theta: np.ndarray) -> SimResult:
        layout = self.layout
        fleet = with_parameters(self.fleet, theta, layout.links, layout.transfers)
        return replay(fleet, self.observations)

    def _equations(
        self,
        result: SimResult,
        theta: np.ndarray,
        held_prefill: np.ndarray | None = None,
        own_scale: np.ndarray | None = None,
    ) -> NormalEquations:
        return accumulate(
            self.fleet,
            result,
            self.observations,
            theta,
            self.layout,
            self.routes,
            self.fit,
            held_prefill=held_prefill,
            own_scale=own_scale,
        )

    def explore(
        self, free: np.ndarray, held_prefill: np.ndarray | None, own_scale: np.ndarray | None
    ) -> tuple[_Iterate, int]:
        """Iterate from nominal over the `free` values; the best iterate and the count. The
        first step judges rows' own prefill times at `own_scale` (second_look)."""
        nominal = self.nominal_theta
        theta, result, best = nominal.copy(), self.start, self.nominal_start
        iterations = stale = 0
        for iterations in range(1, self.max_iterations + 1):
            self.progress(iterations / (self.max_iterations + 2), f"iteration {iterations}")
            eq = self._equations(
                result, theta, held_prefill, own_scale if iterations == 1 else None
            )
            step = solve(
                eq, nominal, free, self.lower, min_rows=self.min_samples, max_relative_ci=EXPLORE_CI
            )
            # A full first step, then half steps: the replay's waits and batch sizes respond
            # to the parameters, and a full step each time makes the weakly determined
            # per-sequence step and the fixed step trade places from one iterate to the next.
            new = theta + (1.0 if iterations == 1 else DAMPING) * (nominal * step.z - theta)
            # Relative to the larger of the two: a per-sequence step may sit at its bound, 0.
            change = float(np.max(np.abs(new - theta) / np.maximum(np.abs(theta), np.abs(new))))
            theta = new
            result = self._replay(theta)
            score = mismatch(result, self.observations, self.fit)
            if score < best.score:
                best, stale = _Iterate(score, theta, result, step, eq), 0
            else:
                stale += 1
            if change < self.tol or stale >= PATIENCE:
                break
        return best, iterations

    def propose(self, own_scale: np.ndarray | None) -> Proposal:
        """Explore, then keep only what the data at the best iterate pins down."""
        layout = self.layout
        best, iterations = self.explore(self.free, None, own_scale)
        # The proposal moves only what the data at the best iterate pins down (fit.py,
        # "Identifiability", at MAX_RELATIVE_CI); everything else goes back to nominal exactly.
        self.progress(
            (self.max_iterations + 1) / (self.max_iterations + 2),
            "judging what the data pins down",
        )
        report_eq = self._equations(best.result, best.theta)
        # Strictly, too, a value whose only evidence is confounded by queueing is held (fit.py,
        # MIN_QUEUE_FREE_ROWS). Not while iterating: far from the truth the replay's own
        # prefill times are off, few rows look queue-free, and a rate held there could never
        # get near it. When the best iterate holds such a rate, the rest is fitted again from
        # nominal with it held there and the decode rows its prefills fill left out
        # (design.accumulate): the values fitted beside a wrongly moved rate had absorbed its
        # error (measured on the twin suite: a 70B decode step proposed 1.57x its truth).
        confounded = thin_evidence(report_eq, layout.size)
        held_prefill = confounded[: layout.profiles] & self.fitted_profiles
        queue_free_judged = report_eq.queue_free.copy()
        if held_prefill.any():
            best, more = self.explore(self.free & ~confounded, held_prefill, own_scale)
            iterations += more
            report_eq = self._equations(best.result, best.theta, held_prefill)
        report_step = solve(
            report_eq,
            self.nominal_theta,
            self.free,
            self.lower,
            min_rows=self.min_samples,
            max_relative_ci=MAX_RELATIVE_CI,
            confounded=confounded,
        )
        # When the nominal replay stayed best, nothing moves: a value the data there places
        # away from nominal, which no iterate could make fit better, is not one it pins down.
        identified = report_step.identified & (best.step is not None)
        if best.step is None:
            report_step = replace(report_step, identified=identified)
        theta = np.where(identified, best.theta, self.nominal_theta)
        result = best.result
        if not np.array_equal(theta, best.theta):
            result = self._replay(theta)
        return Proposal(theta, result, report_step, report_eq, queue_free_judged, iterations)
