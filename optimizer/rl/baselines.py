"""Phase 2 of `optimizer.rl.train.train`: the teacher and every built-in heuristic on the
validation scenarios. They draw the learning curve's reference lines, set the per-replay bars
validation measures the mean TTFT and cost against (`optimizer.rl.validation`), and the bar a
run must clear to be registered without an override (`TrainResult.below_baseline`).
"""

from __future__ import annotations

from optimizer.decide.registry import POLICY_NAMES
from optimizer.rl.run import Run
from optimizer.rl.validation import reference_cost_per_1k, reference_ttft_mean_ms, summarise


def measure_baselines(run: Run) -> None:
    """The teacher and every heuristic on the validation scenarios: the learning curve's
    reference lines, and the bar a run must clear to be registered without an override."""
    names = list(dict.fromkeys([run.config.teacher, *POLICY_NAMES]))
    per_policy = len(run.validation_jobs(names[0]))
    jobs = [job for name in names for job in run.validation_jobs(name)]
    results = run.map_replays(jobs)
    by_policy = {
        name: results[i * per_policy : (i + 1) * per_policy] for i, name in enumerate(names)
    }
    heuristics = [by_policy[n] for n in POLICY_NAMES]
    reference = reference_ttft_mean_ms(heuristics)
    reference_cost = reference_cost_per_1k(heuristics)
    metrics = {
        name: summarise(rows, run.config, reference, reference_cost)
        for name, rows in by_policy.items()
    }
    best = max(
        POLICY_NAMES,
        key=lambda n: (metrics[n]["slo_attainment"], -metrics[n]["cost_per_1k_requests"]),
    )
    run.baselines = {
        "teacher": {"name": run.config.teacher, **metrics[run.config.teacher]},
        "best_heuristic": {"name": best, **metrics[best]},
        "heuristics": {n: metrics[n] for n in POLICY_NAMES},
        "reference_ttft_mean_ms": reference,
        "reference_cost_per_1k": reference_cost,
    }
    run.report(
        "baselines",
        1.0,
        {
            "teacher_attainment": metrics[run.config.teacher]["slo_attainment"],
            "best_heuristic": best,
            "best_heuristic_attainment": metrics[best]["slo_attainment"],
            "best_heuristic_ttft_p95_ms": metrics[best]["ttft_p95_ms"],
            "best_heuristic_ttft_mean_ms": metrics[best]["ttft_mean_ms"],
            "validation_utilisations": list(run.config.validation_utilisations),
            "validation_load": metrics[best]["load"],
        },
    )
