"""The exploration probe's arm (issue #26; docs/twin.md, "Exploration probe").

Where traffic leaves a profile unobserved, the twin cannot calibrate it: a policy that never
sends a request to a node teaches the calibration nothing about that node. A running probe
(`Probe`, carried by the snapshot) takes a small share of decisions, sticky per session as
the canary arm is (`pickers.sticky`), and answers them with an under-observed node instead of
the policy's pick, but only among the candidates the filters left (model, residency,
reachability, breakers, stale telemetry: nothing the hard constraints refuse) and only where
that node's own estimates meet the request's TTFT and E2E targets. Otherwise the policy's
answer stands. Pure: the engine calls it between the pipeline and the receipt, and the
simulator could call it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimizer.decide.pickers.sticky import within
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.snapshot import Probe


def in_probe(probe: Probe, sticky_key: str) -> bool:
    """Whether a decision keyed by `sticky_key` falls in the probe's share. The key is salted
    with the probe's id: unsalted, the probe's sessions would be the first buckets, exactly
    the canary's, and a probe during a canary would take its share out of the canary arm."""
    return probe.share > 0 and within(f"probe-{probe.probe_id}:{sticky_key}", probe.share)


@dataclass(frozen=True, slots=True)
class ProbePick:
    """The probe's answer: the candidate's position, and why (for the receipt)."""

    position: int
    node: str
    ttft_ms: float
    ttft_target_ms: float


def probe_pick(probe: Probe, candidates: Candidates) -> ProbePick | None:
    """The probe node for this request: among the candidates that serve its model on a
    target (node, model) pair, those whose estimated TTFT and E2E are within the request's
    targets (`Candidates.targets`: its SLO's, or the generous defaults without one), the one
    with the lowest estimated TTFT. None when there is none: the policy's pick stands."""
    if not len(candidates):
        return None
    model = candidates.request.model
    names = candidates.names
    wanted = np.fromiter(
        ((name, model) in probe.targets for name in names), dtype=bool, count=len(names)
    )
    if not wanted.any():
        return None
    est = candidates.est
    ttft_target, e2e_target = candidates.targets
    ok = wanted & (est.ttft_s <= ttft_target) & (est.e2e_s <= e2e_target)
    if not ok.any():
        return None
    ttft = np.where(ok, est.ttft_s, np.inf)
    j = int(np.argmin(ttft))
    return ProbePick(j, names[j], float(ttft[j]) * 1000.0, ttft_target * 1000.0)


def probe_order(order: list[int], pick: ProbePick, k: int) -> list[int]:
    """The picker's order with the probe node first and the policy's answers after it as
    fallbacks (so a failed probe request falls back to what the policy would have sent)."""
    return [pick.position, *(j for j in order if j != pick.position)][:k]
