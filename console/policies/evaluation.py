"""Simulator evaluations of a policy version against the active policy and every heuristic,
on the same arrivals (docs/contracts.md §3 report objects), for the console's approval step:
`evaluation_execute` is the worker's side of an evaluation (`jobs.evaluation_request`
queues it). Each replay is a job fanned out over the Celery workers (console.policies.fanout)."""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from statistics import fmean
from typing import Any

from django.conf import settings
from django.utils import timezone

from console.inventory.selectors import inventory_topology
from console.policies.artifacts import artifact_problem
from console.policies.choices import JobStatus
from console.policies.fanout import fan_out
from console.policies.models import PolicyEvaluation
from console.policies.selectors import active_policy_spec
from console.twin.services import twin_inputs
from console.worker_stop import WorkerStopping
from optimizer.decide.registry import POLICY_NAMES
from optimizer.rl.replays import ORACLE, Job, trace_job
from optimizer.topology import Topology
from optimizer.topology_files import dump_topology
from telemetry.conf import scrape_interval_seconds

logger = logging.getLogger(__name__)

# The figures an approver compares, averaged over seeds.
HEADLINE = ("slo_attainment", "cost_per_1k_requests", "prefix_hit_rate")


def evaluation_execute(*, evaluation_id: int) -> None:
    """The worker's side of an evaluation: replay the version on the inventory's own fleet,
    or on the twin's calibrated fleet and recorded traffic when the evaluation asks
    (docs/twin.md), and keep the report."""
    evaluation = PolicyEvaluation.objects.select_related("version").get(pk=evaluation_id)
    if evaluation.status == JobStatus.SUCCEEDED:
        return  # redelivered after it finished: nothing to do
    if (problem := artifact_problem(evaluation.version)) is not None:
        _finish(evaluation_id, JobStatus.FAILED, error=problem)
        return
    PolicyEvaluation.objects.filter(pk=evaluation_id).update(status=JobStatus.RUNNING, progress=0.0)

    def progress(fraction: float) -> None:
        PolicyEvaluation.objects.filter(pk=evaluation_id).update(progress=fraction)

    try:
        twin = twin_inputs(
            recorded_hours=evaluation.recorded_hours,
            calibration_run=evaluation.calibration_run,
            out=Path(settings.LOCUS_ARTIFACTS_DIR) / "evaluations" / str(evaluation_id),
        )
        report = evaluate_versions(
            evaluation_id=evaluation_id,
            topology=twin.topology or inventory_topology(),
            trace=twin.trace or evaluation.trace,
            candidate=evaluation.version.spec,
            baseline=active_policy_spec(),
            loads=[float(x) for x in evaluation.loads],
            seeds=[int(s) for s in evaluation.seeds],
            limit=settings.LOCUS_EVALUATION_LIMIT,
            # What a canary will see: node state through the fleet's scrape interval.
            telemetry_interval_s=scrape_interval_seconds(),
            progress=progress,
        )
    except WorkerStopping:
        # Back to the queue (the task requeues its message): it runs again on the next start.
        logger.info("evaluation %s requeued: its worker is stopping", evaluation_id)
        PolicyEvaluation.objects.filter(pk=evaluation_id).update(
            status=JobStatus.QUEUED, progress=0.0
        )
        raise
    except Exception as exc:
        logger.exception("evaluation %s failed", evaluation_id)
        _finish(evaluation_id, JobStatus.FAILED, error=str(exc))
        return
    if twin.data:
        report["data"] = twin.data  # which recorded traffic and fleet, and the twin's fidelity
    _finish(evaluation_id, JobStatus.SUCCEEDED, report=report)


def _finish(evaluation_id: int, status: str, **fields: Any) -> None:
    PolicyEvaluation.objects.filter(pk=evaluation_id).update(
        status=status, finished_at=timezone.now(), progress=1.0, **fields
    )


def evaluation_jobs(
    *,
    topology_file: str,
    trace: str,
    specs: list[str],
    loads: list[float],
    seeds: list[int],
    limit: int | None,
    telemetry_interval_s: float | None = None,
) -> list[Job]:
    """One replay per load, seed and policy, plus the oracle per load and seed."""
    return [
        trace_job(
            topology=topology_file,
            trace=trace,
            policy=spec,
            load=load,
            seed=seed,
            limit=limit,
            full_report=True,
            telemetry_interval_s=telemetry_interval_s,
        )
        for load in loads
        for seed in seeds
        for spec in [*specs, ORACLE]
    ]


def evaluate_versions(
    *,
    evaluation_id: int,
    topology: Topology,
    trace: str,
    candidate: str,
    baseline: str,
    loads: list[float],
    seeds: list[int],
    limit: int | None = None,
    telemetry_interval_s: float | None = None,
    progress: Callable[[float], None] | None = None,
) -> dict[str, Any]:
    """Run candidate, baseline and the heuristics at each load and seed, fanned out over the
    Celery workers (console.policies.fanout).

    With `telemetry_interval_s`, policies see node state as the live engine does, through
    telemetry that many seconds apart (`optimizer.sim.telemetry`), so the report predicts what
    a canary will see; None shows them the simulator's exact state.

    Returns `{"loads": {load: {"policies": {spec: mean report}, "oracle": ...,
    "best_heuristic": name, "utilisation": ..}}, "verdict": {...}}` where each policy's report
    holds the headline figures averaged over seeds plus TTFT percentiles averaged likewise.
    """
    work = Path(settings.LOCUS_ARTIFACTS_DIR) / "evaluations" / str(evaluation_id)
    work.mkdir(parents=True, exist_ok=True)
    topology_file = work / "topology.yaml"
    topology_file.write_text(dump_topology(topology), encoding="utf-8")
    specs = list(dict.fromkeys([candidate, baseline, *POLICY_NAMES]))
    jobs = evaluation_jobs(
        topology_file=str(topology_file),
        trace=trace,
        specs=specs,
        loads=loads,
        seeds=seeds,
        limit=limit,
        telemetry_interval_s=telemetry_interval_s,
    )
    # A redelivered task starts its replays afresh.
    replays = work / f"replays-{uuid.uuid4().hex}"
    results = fan_out(jobs, replays, progress)
    shutil.rmtree(replays, ignore_errors=True)
    report = evaluation_report(jobs, results, trace, candidate, baseline, seeds)
    return {**report, "telemetry_interval_s": telemetry_interval_s}


def evaluation_report(
    jobs: list[Job],
    results: list[dict[str, Any]],
    trace: str,
    candidate: str,
    baseline: str,
    seeds: list[int],
) -> dict[str, Any]:
    """The report of `jobs`' `results`, grouped by the jobs' own fields only."""
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    oracles: dict[str, dict[str, Any]] = {}
    for job, result in zip(jobs, results, strict=True):
        load = f"{job['load']:g}"
        if job["policy"] == ORACLE:
            oracles[load] = result  # the last seed's, as before
        else:
            runs.setdefault(load, {}).setdefault(job["policy"], []).append(result)
    by_load: dict[str, Any] = {}
    for load, per_spec in runs.items():
        policies = {spec: _mean_report(reports) for spec, reports in per_spec.items()}
        best = max(
            POLICY_NAMES,
            key=lambda n: (policies[n]["slo_attainment"], -policies[n]["cost_per_1k_requests"]),
        )
        oracle = {k: v for k, v in oracles[load].items() if k not in ("load", "utilisation")}
        by_load[load] = {
            "policies": policies,
            "oracle": oracle,
            "best_heuristic": best,
            "utilisation": oracles[load]["utilisation"],
        }
    return {
        "trace": trace,
        "candidate": candidate,
        "baseline": baseline,
        "seeds": seeds,
        "loads": by_load,
        "verdict": _verdict(by_load, candidate, baseline),
    }


def _mean_report(reports: list[dict[str, Any]]) -> dict[str, Any]:
    first = reports[0]
    mean: dict[str, Any] = {key: fmean(r[key] for r in reports) for key in HEADLINE}
    for key in ("ttft_ms", "e2e_ms"):
        mean[key] = {p: fmean(r[key][p] for r in reports) for p in first[key]}
    mean["requests"] = first["requests"]
    mean["served"] = fmean(r["served"] for r in reports)
    mean["residency_violations"] = sum(r["residency_violations"] for r in reports)
    return mean


def _verdict(by_load: dict[str, Any], candidate: str, baseline: str) -> dict[str, Any]:
    """Per load, the candidate's attainment and cost against the baseline and the best
    heuristic, in points (attainment) and ratios (cost)."""
    out = {}
    for load, result in by_load.items():
        p = result["policies"]
        best = p[result["best_heuristic"]]
        out[load] = {
            "vs_baseline_points": 100
            * (p[candidate]["slo_attainment"] - p[baseline]["slo_attainment"]),
            "vs_best_heuristic_points": 100
            * (p[candidate]["slo_attainment"] - best["slo_attainment"]),
            "cost_ratio_vs_baseline": _ratio(
                p[candidate]["cost_per_1k_requests"], p[baseline]["cost_per_1k_requests"]
            ),
        }
    return out


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None
