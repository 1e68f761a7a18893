"""Replays as plain-JSON jobs, so validation and evaluation can fan out over any executor.

A job names everything a replay needs by path and number (topology file, trace file, policy
name or scorer directory, seeds, and either a training scenario or a load), so a Celery worker
on another machine runs exactly the replay this process would have run: the result depends on
the job alone, and the report assembled from the results is identical whatever ran them
(docs/learned-policy.md, fan-out). `run_replay` is the one function every executor calls;
`MapFn` is how callers hand a batch of jobs to an executor (`inline_map` runs them here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from optimizer.arrivals import draw_requests
from optimizer.capacity import FleetCapacity, TokenMix, utilisation_of_load
from optimizer.decide.registry import POLICY_NAMES, load_policy
from optimizer.decide.scorers.base import Policy
from optimizer.oracle import oracle_report
from optimizer.report import build_report
from optimizer.rl.scenarios import ScenarioConfig, sample_scenario
from optimizer.rl.teacher import TEACHER_NAMES, get_teacher
from optimizer.sim import TelemetryModel, simulate
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from optimizer.traces import TraceRequest, load_trace

Job = dict[str, Any]
MapFn = Callable[[Sequence[Job]], list[dict[str, Any]]]
ORACLE = "oracle"


def inline_map(jobs: Sequence[Job]) -> list[dict[str, Any]]:
    """Run every job in this process, in order."""
    return [run_replay(job) for job in jobs]


# Workers run many jobs on the same few files: each is parsed once per process and version
# (keyed by its modification time and size, so a file rewritten in place is read again).
def _version(path: str) -> tuple[str, int, int]:
    stat = Path(path).stat()
    return path, stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=8)
def _topology_at(version: tuple[str, int, int]) -> Topology:
    return load_topology(version[0])


@lru_cache(maxsize=4)
def _trace_at(version: tuple[str, int, int]) -> tuple[TraceRequest, ...]:
    return tuple(load_trace(version[0]))


@lru_cache(maxsize=8)
def _capacity_at(version: tuple[str, int, int]) -> FleetCapacity:
    return FleetCapacity(_topology_at(version))


def _topology(path: str) -> Topology:
    return _topology_at(_version(path))


def _trace(path: str) -> tuple[TraceRequest, ...]:
    return _trace_at(_version(path))


def _capacity(path: str) -> FleetCapacity:
    return _capacity_at(_version(path))


def _policy(spec: str, topology: Topology, seed: int) -> Policy:
    """A heuristic, a trained directory or `generalist` (`load_policy`), or the warm start's
    private teacher (`optimizer.rl.teacher`, for training's baselines)."""
    if spec in TEACHER_NAMES and spec not in POLICY_NAMES:
        return get_teacher(spec, topology)
    return load_policy(spec, topology, seed)


def scenario_job(
    *,
    topology: str,
    trace: str,
    policy: str,
    window: int,
    utilisation: float,
    scenario_seed: int,
    policy_seed: int = 0,
    telemetry_interval_s: float | None = None,
    prompt_scale: float | None = None,
    prompt_scale_range: tuple[float, float] | None = None,
) -> Job:
    """A replay of one training-style scenario (validation): a window of `trace` at
    `utilisation` of the fleet's capacity, drawn from `scenario_seed`. `prompt_scale` fixes
    the factor on prompt lengths (capped as training's scenarios cap them) instead of drawing
    it from `ScenarioConfig.prompt_scale`; the draw is still taken, so every other draw of
    the scenario (window, prefixes, sources) is the same as without it. `prompt_scale_range`
    is the range the factor is drawn from otherwise (None: `ScenarioConfig`'s default)."""
    return {
        "kind": "scenario",
        "topology": topology,
        "trace": trace,
        "policy": policy,
        "window": window,
        "utilisation": utilisation,
        "scenario_seed": scenario_seed,
        "policy_seed": policy_seed,
        "telemetry_interval_s": telemetry_interval_s,
        "prompt_scale": prompt_scale,
        "prompt_scale_range": None if prompt_scale_range is None else list(prompt_scale_range),
    }


def trace_job(
    *,
    topology: str,
    trace: str,
    policy: str,
    load: float,
    seed: int,
    limit: int | None = None,
    full_report: bool = False,
    telemetry_interval_s: float | None = None,
) -> Job:
    """A replay of a whole trace (its first `limit` requests) at `load` x its arrival rate,
    sources and models drawn with `seed` (docs/contracts.md §2); `policy` may be `ORACLE` for
    the limit. `full_report` returns the whole report object of docs/contracts.md §3.
    `telemetry_interval_s` (both kinds): policies see node state through telemetry that many
    seconds apart, as the live engine does (`optimizer.sim.telemetry`); None: exact state."""
    return {
        "kind": "trace",
        "topology": topology,
        "trace": trace,
        "policy": policy,
        "load": load,
        "seed": seed,
        "limit": limit,
        "full_report": full_report,
        "telemetry_interval_s": telemetry_interval_s,
    }


def run_replay(job: Job) -> dict[str, Any]:
    """The metrics of one job's replay."""
    topology = _topology(job["topology"])
    trace = list(_trace(job["trace"]))
    if job["kind"] == "scenario":
        config = ScenarioConfig(window=job["window"], utilisation=(job["utilisation"],) * 2)
        if job.get("prompt_scale_range") is not None:
            low, high = job["prompt_scale_range"]
            config = replace(config, prompt_scale=(float(low), float(high)))
        if job.get("prompt_scale") is not None:
            config = replace(config, prompt_scale=(job["prompt_scale"],) * 2)
        rng = np.random.default_rng(job["scenario_seed"])
        scenario = sample_scenario(trace, topology, config, rng, _capacity(job["topology"]))
        requests, arrival_s, events = scenario.requests, scenario.arrival_s, scenario.events
        load, utilisation = scenario.load, scenario.utilisation
        seed = job["policy_seed"]
    else:
        load, seed = float(job["load"]), int(job["seed"])
        trace = trace[: job.get("limit") or len(trace)]
        scaled = [
            TraceRequest(r.arrival_s / load, r.prompt_tokens, r.output_tokens, r.hash_ids)
            for r in trace
        ]
        requests, events = draw_requests(scaled, topology, seed), []
        arrival_s = [r.arrival_s for r in scaled]
        utilisation = utilisation_of_load(_capacity(job["topology"]), TokenMix.of(trace), load)
    context = {"load": load, "utilisation": utilisation}
    if job["policy"] == ORACLE:
        oracle = oracle_report(topology, requests)
        if job.get("full_report"):
            return oracle | context
        return {"slo_attainment": oracle["slo_attainment"], **context}
    policy = _policy(job["policy"], topology, seed)
    interval = job.get("telemetry_interval_s")
    telemetry = TelemetryModel(interval, seed=seed) if interval is not None else None
    result = simulate(topology, policy, requests, arrival_s, events=events, telemetry=telemetry)
    report = build_report(result, topology, job["policy"])
    if job.get("full_report"):
        return report | context
    return {
        "slo_attainment": report["slo_attainment"],
        "ttft_p95_ms": report["ttft_ms"]["p95"],
        "ttft_mean_ms": report["ttft_ms"]["mean"],
        "cost_per_1k_requests": report["cost_per_1k_requests"],
        **context,
    }
