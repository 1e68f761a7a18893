"""Run the held-out suite and assemble its report.

Every replay is a trace job of `optimizer.rl.replays`, the machinery `evaluate`'s arrivals and
the console's evaluations share: for each cell (fleet, trace, load) and seed, the trace's first
`limit` requests are replayed at the load that offers the cell's utilisation of the fleet's
capacity (`optimizer.capacity`, as `--utilisation` does), sources and models drawn with the
seed, node state seen through telemetry `telemetry_interval_s` apart, once per heuristic, for
the zero-shot policy, for the fleet's fine-tuned policy when there is one, and for the oracle.
Jobs are independent, so they run over `workers` processes and the report does not depend on
how many; runs an earlier report already holds can be taken from it (`optimizer.heldout.reuse`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm import tqdm

from optimizer.capacity import FleetCapacity, TokenMix, load_for_utilisation
from optimizer.decide.registry import GENERALIST, POLICY_NAMES
from optimizer.heldout import goals
from optimizer.heldout.files import policy_files
from optimizer.heldout.suite import Cell, cells
from optimizer.heldout.tuned import fine_tuned_policies
from optimizer.rl.replays import ORACLE, Job, run_replay, trace_job
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace

ZERO_SHOT: goals.Role = "zero-shot"
FINE_TUNED: goals.Role = "fine-tuned"
METRICS = ("slo_attainment", "ttft_mean_ms", "ttft_p95_ms", "cost_per_1k_requests")

RunKey = tuple[str, str, float, str, int]
"""One run of the suite, as reports key it across runs: (fleet, trace, utilisation, role,
seed)."""


@dataclass(frozen=True, slots=True)
class SuiteConfig:
    """What one run of the suite measures."""

    heuristics: tuple[str, ...] = POLICY_NAMES
    """The heuristics the best one is picked from (every built-in by default)."""
    zero_shot: str = GENERALIST
    """The policy judged zero-shot: `generalist`, a directory written by `train`, or a
    heuristic's name (a baseline, or a cheap stand-in in tests)."""
    fine_tuned: str | None = None
    """A directory with one fine-tuned policy per fleet, in a subdirectory named after it, or
    one per fleet and seed (`optimizer.heldout.tuned`)."""
    seeds: tuple[int, ...] = (0, 1, 2)
    limit: int = 4000
    """Requests per replay: the first `limit` of the trace."""
    telemetry_interval_s: float | None = 10.0
    workers: int = 2
    fleets: tuple[str, ...] | None = None
    """Only these fleets (default: every one)."""
    traces: tuple[str, ...] | None = None
    """Only these shipped traces, by file name (default: every one)."""


def fine_tuned_dirs(config: SuiteConfig, fleets: Sequence[str]) -> dict[str, dict[int, str]]:
    """Per fleet that has one, the fine-tuned policy each seed judges; ValueError if
    `fine_tuned` is given but its layout is wrong or holds none for the fleets run."""
    if config.fine_tuned is None:
        return {}
    found, problems = fine_tuned_policies(Path(config.fine_tuned), fleets, config.seeds)
    if problems:
        raise ValueError("; ".join(problems))
    return found


@dataclass(frozen=True, slots=True)
class Plan:
    """The suite's cells, the load each runs at, and its runs: `keys[i]` (cell index, role,
    seed) is replayed by `jobs[i]`; the role is a heuristic's name, `zero-shot`, `fine-tuned` or
    `oracle`."""

    cells: list[Cell]
    loads: list[float]
    keys: list[tuple[int, str, int]]
    jobs: list[Job]

    def run_key(self, index: int) -> RunKey:
        cell_index, role, seed = self.keys[index]
        cell = self.cells[cell_index]
        return (cell.fleet, cell.trace, float(cell.utilisation), role, seed)


def plan(config: SuiteConfig) -> Plan:
    """Every run of the suite `config` describes (see `Plan`)."""
    suite = cells(
        list(config.fleets) if config.fleets else None,
        list(config.traces) if config.traces else None,
    )
    tuned = fine_tuned_dirs(config, sorted({c.fleet for c in suite}))
    capacity: dict[str, FleetCapacity] = {}
    mixes: dict[str, TokenMix] = {}
    keys: list[tuple[int, str, int]] = []
    jobs: list[Job] = []
    loads: list[float] = []
    for index, cell in enumerate(suite):
        if cell.fleet not in capacity:
            capacity[cell.fleet] = FleetCapacity(load_topology(cell.topology_path))
        if cell.trace not in mixes:
            mixes[cell.trace] = TokenMix.of(load_trace(cell.trace_path, limit=config.limit))
        load = load_for_utilisation(capacity[cell.fleet], mixes[cell.trace], cell.utilisation)
        loads.append(load)
        for seed in config.seeds:
            roles = [(h, h) for h in config.heuristics] + [(ZERO_SHOT, config.zero_shot)]
            if cell.fleet in tuned:
                roles.append((FINE_TUNED, tuned[cell.fleet][seed]))
            roles.append((ORACLE, ORACLE))
            for role, spec in roles:
                keys.append((index, role, seed))
                jobs.append(
                    trace_job(
                        topology=str(cell.topology_path),
                        trace=str(cell.trace_path),
                        policy=spec,
                        load=load,
                        seed=seed,
                        limit=config.limit,
                        full_report=role == ORACLE,
                        telemetry_interval_s=config.telemetry_interval_s,
                    )
                )
    return Plan(suite, loads, keys, jobs)


def execute(jobs: Sequence[Job], workers: int, progress: bool) -> list[dict[str, Any]]:
    """Every job's result, in job order, over `workers` processes (1: in this one)."""
    bar = tqdm(total=len(jobs), desc="heldout-suite", unit="replay", disable=not progress)
    results: list[dict[str, Any]] = []
    if workers <= 1:
        for job in jobs:
            results.append(run_replay(job))
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for result in pool.map(run_replay, jobs):
                results.append(result)
                bar.update()
    bar.close()
    return results


def _stats(values: list[float]) -> dict[str, Any]:
    return {"mean": float(np.mean(values)), "std": float(np.std(values)), "runs": values}


def _finite(value: float) -> float | None:
    # A report is JSON (allow_nan=False): a ratio to a zero TTFT has no value.
    return value if np.isfinite(value) else None


def _verdict(
    role: goals.Role, regime: goals.Regime, ours: goals.Summary, best: goals.Summary
) -> dict[str, Any]:
    v = goals.judge(role, regime, ours, best)
    return {
        "passed": v.passed,
        "bar": v.bar,
        "margin_pt": v.margin_pt,
        "ttft_mean_ratio": _finite(v.ttft_mean_ratio),
        "ttft_p95_ratio": _finite(v.ttft_p95_ratio),
    }


def _summary(runs: dict[str, list[float]]) -> goals.Summary:
    return goals.Summary(*(float(np.mean(runs[m])) for m in METRICS))


def figures(role: str, result: dict[str, Any]) -> dict[str, float]:
    """What the report keeps of one replay's result: the oracle's attainment and mean TTFT
    (its placements are not a policy's, so no p95 or cost), every other role's `METRICS`."""
    if role == ORACLE:
        return {
            "slo_attainment": float(result["slo_attainment"]),
            "ttft_mean_ms": float(result["ttft_ms"]["mean"]),
        }
    return {m: float(result[m]) for m in METRICS}


def assemble(
    config: SuiteConfig,
    plan_: Plan,
    values: Sequence[dict[str, float]],
    wall_seconds: float,
    reused: tuple[str, int, int] | None = None,
) -> dict[str, Any]:
    """The suite's JSON report from every run's `figures` (in `plan_.keys` order); `reused`
    names the earlier report runs were taken from, how many, and how many were checked."""
    suite = plan_.cells
    runs: list[dict[str, dict[str, list[float]]]] = [{} for _ in suite]
    for (index, role, _seed), run in zip(plan_.keys, values, strict=True):
        for m, value in run.items():
            runs[index].setdefault(role, {}).setdefault(m, []).append(value)
    out_cells = []
    for index, cell in enumerate(suite):
        by_role = runs[index]
        summaries = {h: _summary(by_role[h]) for h in config.heuristics}
        best = goals.best_heuristic(summaries)
        oracle = float(np.mean(by_role[ORACLE]["slo_attainment"]))
        regime = goals.regime(summaries[best].slo_attainment, oracle, cell.utilisation)
        verdicts = {
            role: _verdict(role, regime, _summary(by_role[role]), summaries[best])
            for role in (ZERO_SHOT, FINE_TUNED)
            if role in by_role
        }
        out_cells.append(
            {
                "fleet": cell.fleet,
                "trace": cell.trace,
                "label": cell.label,
                "utilisation": cell.utilisation,
                "load": plan_.loads[index],
                "regime": regime,
                "best_heuristic": best,
                "policies": {
                    role: {m: _stats(v) for m, v in metrics.items()}
                    for role, metrics in by_role.items()
                },
                "goals": verdicts,
            }
        )
    return {
        "suite": "heldout",
        "config": {
            "heuristics": list(config.heuristics),
            "zero_shot": config.zero_shot,
            "fine_tuned": config.fine_tuned,
            "policy_files": policy_files(config.zero_shot, config.fine_tuned),
            "seeds": list(config.seeds),
            "limit": config.limit,
            "telemetry_interval_s": config.telemetry_interval_s,
            "workers": config.workers,
            "reused_from": reused[0] if reused else None,
            "replays_reused": reused[1] if reused else 0,
            "reuse_checked": reused[2] if reused else 0,
        },
        "rules": {
            "best_heuristic": "highest mean SLO attainment over the seeds; ties: lower mean TTFT",
            "heavy": f"best heuristic below {goals.HEAVY_SHARE_OF_ORACLE:g} x the oracle's "
            "attainment",
            "light": f"not heavy, utilisation <= {goals.LIGHT_MAX_UTILISATION:g}",
            "moderate": "every other cell",
        },
        "cells": out_cells,
        "fleets": fleet_summary(out_cells),
        "wall_seconds": wall_seconds,
    }


def fleet_summary(out_cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per fleet: the regimes its cells reached and how many goals each learned role met."""
    fleets: dict[str, Any] = {}
    for cell in out_cells:
        entry = fleets.setdefault(cell["fleet"], {"regimes": [], "goals": {}})
        if cell["regime"] not in entry["regimes"]:
            entry["regimes"].append(cell["regime"])
        for role, verdict in cell["goals"].items():
            tally = entry["goals"].setdefault(role, {"passed": 0, "cells": 0})
            tally["cells"] += 1
            tally["passed"] += int(verdict["passed"])
    for entry in fleets.values():
        entry["every_regime"] = set(entry["regimes"]) == {"light", "moderate", "heavy"}
    return fleets


class Reuse(Protocol):
    """Runs taken from an earlier report instead of replayed (`optimizer.heldout.reuse`)."""

    @property
    def path(self) -> str: ...

    def take(
        self, plan_: Plan, workers: int, progress: bool
    ) -> tuple[dict[int, dict[str, float]], int]: ...


def run_suite(
    config: SuiteConfig, progress: bool = False, reuse: Reuse | None = None
) -> dict[str, Any]:
    """Plan, run and assemble the suite (see the module docstring), taking what `reuse` holds."""
    started = time.perf_counter()
    plan_ = plan(config)
    values, checked = reuse.take(plan_, config.workers, progress) if reuse else ({}, 0)
    todo = [i for i in range(len(plan_.jobs)) if i not in values]
    results = execute([plan_.jobs[i] for i in todo], config.workers, progress)
    for i, result in zip(todo, results, strict=True):
        values[i] = figures(plan_.keys[i][1], result)
    taken = (reuse.path, len(plan_.jobs) - len(todo), checked) if reuse else None
    ordered = [values[i] for i in range(len(plan_.jobs))]
    return assemble(config, plan_, ordered, time.perf_counter() - started, taken)
