"""Known-truth calibration scenarios: a fleet whose true speeds differ from its nominal ones by
chosen factors, and observations of traffic served by that truth.

This is how the twin is judged (tests/optimizer/calibration/, tools/twin_bench.py): the truth is
known, so every fitted value can be compared with it, and the held-out errors of the applied
fleet with those of the nominal one. Traffic is `spread` (least-loaded: every node sees some)
or `concentrated` (weighted-score: the fast nodes take most of it, so slow profiles are barely
observed and the busy ones queue), at a share of the nominal fleet's capacity
(`utilisation`, docs/learned-policy.md: 1 = fluid saturation, above it the fleet is overloaded).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from optimizer.arrivals import draw_requests
from optimizer.calibration.replay import rebuilt
from optimizer.capacity import FleetCapacity, TokenMix, load_for_utilisation
from optimizer.decide.registry import load_policy
from optimizer.observations import (
    Observations,
    load_observations,
    simulated_observations,
    write_observations,
)
from optimizer.sim import TelemetryModel, simulate
from optimizer.topology import Topology
from optimizer.topology_entries import Profile
from optimizer.traces import load_trace

TRAFFIC = {"spread": "least-loaded", "concentrated": "weighted-score"}


def perturbed(topology: Topology, factors: Mapping[str, float]) -> Topology:
    """`topology` with the profiles named `model@accelerator` taking `factor` times as long:
    prefill rate divided by it, decode step and per-sequence step multiplied by it."""
    known = {f"{p.model}@{p.accelerator}" for p in topology.profiles}
    unknown = sorted(set(factors) - known)
    if unknown:
        raise ValueError(f"unknown profiles {unknown}; the fleet has {sorted(known)}")

    def scaled(p: Profile) -> Profile:
        f = factors.get(f"{p.model}@{p.accelerator}")
        if f is None:
            return p
        return p.model_copy(
            update={
                "prefill_tokens_per_s": round(p.prefill_tokens_per_s / f, 2),
                "decode_step_ms": round(p.decode_step_ms * f, 5),
                "decode_step_ms_per_seq": round(p.decode_step_ms_per_seq * f, 6),
            }
        )

    return rebuilt(topology, profiles=tuple(scaled(p) for p in topology.profiles))


@dataclass(frozen=True)
class Scenario:
    """Traffic of `trace` (its first `limit` requests) at `utilisation` of the nominal fleet's
    capacity, placed by the `traffic` kind's policy on the true fleet."""

    trace: str
    traffic: str  # a key of TRAFFIC
    utilisation: float
    limit: int
    seed: int = 0
    # Policies see node state through telemetry this many seconds apart, as the live engine
    # does (the evaluation used 10 s).
    telemetry_interval_s: float = 10.0


def observe(nominal: Topology, truth: Topology, scenario: Scenario, out: Path) -> Observations:
    """Serve the scenario's traffic on `truth`, write what was observed to `out` (JSONL) and
    load it back against `nominal`, exactly as `calibrate` reads a file."""
    if scenario.traffic not in TRAFFIC:
        raise ValueError(f"traffic must be one of {sorted(TRAFFIC)}, not {scenario.traffic!r}")
    unscaled = load_trace(scenario.trace, limit=scenario.limit)
    load = load_for_utilisation(FleetCapacity(nominal), TokenMix.of(unscaled), scenario.utilisation)
    trace = load_trace(scenario.trace, limit=scenario.limit, load=load)
    requests = draw_requests(trace, truth, scenario.seed)
    policy = load_policy(TRAFFIC[scenario.traffic], truth, scenario.seed)
    telemetry = TelemetryModel(scenario.telemetry_interval_s, seed=scenario.seed)
    result = simulate(truth, policy, requests, [r.arrival_s for r in trace], telemetry=telemetry)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        write_observations(handle, simulated_observations(result, truth))
    return load_observations(out, nominal, seed=scenario.seed)
