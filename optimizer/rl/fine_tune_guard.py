"""The fine-tune guard: `train --init P` does no harm to P by construction (issue #26).

A fine-tune validates on draws from its own training trace, so it cannot see what it costs on
a trace it never trains on: fine-tuned on Azure conversations, the generalist gained 6.6 points
on mooncake-long-context's Azure cells and lost 6.3-6.5 on its Mooncake cells (prompts ~11k
tokens; docs/heldout-suite.md). With the guard, a fine-tune also replays its validation draws
with every prompt `TrainConfig.fine_tune_long_prompt_scale` times longer (the same windows,
utilisations, prefixes and sources, `optimizer.rl.replays.scenario_job`), and a checkpoint
replaces the start only if it scores no worse than the start on both validations; otherwise
the start's weights are what the fine-tune exports. The start itself is P with its own decision
cost weight unless another weight tried is no worse on both validations
(`optimizer.rl.validation.choose_start`): the weight changes decisions as weights do.

The long-prompt score is `optimizer.rl.validation.score` without the terms measured against
the heuristics (the heuristics are not replayed on the long-prompt draws, which would double
the baselines' cost): attainment, p95 TTFT and cost, compared with the start's on the same
draws. Training from scratch or imitation is not guarded: there is no start to protect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `describe` serves the CLI and the console, which need no training stack
    from optimizer.rl.run import Run

SUFFIX = "_long_prompt"
"""Appended to the name of each metric of the long-prompt validation."""
KEYS = ("slo_attainment", "ttft_p95_ms", "ttft_mean_ms", "cost_per_1k_requests", "validation_score")
"""The long-prompt validation's metrics kept in each validation record."""
SCORE = f"validation_score{SUFFIX}"

KEPT_START = "kept the start"
"""The guard's final decision when no checkpoint was admitted."""


def guarded(run: Run) -> bool:
    """Whether this run is a fine-tune the guard protects."""
    return bool(run.config.init) and run.config.fine_tune_long_prompt_scale is not None


def long_prompt(metrics: dict[str, float]) -> dict[str, float]:
    """The long-prompt validation's metrics under their own names."""
    return {f"{key}{SUFFIX}": metrics[key] for key in KEYS}


def worse_than_start(start: dict[str, float], candidate: dict[str, float]) -> list[str]:
    """The validations (`plain`, `long-prompt`) on which `candidate` scores below `start`."""
    worse = []
    if candidate["validation_score"] < start["validation_score"]:
        worse.append("plain")
    if candidate[SCORE] < start[SCORE]:
        worse.append("long-prompt")
    return worse


def admit(
    start: dict[str, float], candidate: dict[str, float], beats_best: bool
) -> tuple[bool, str]:
    """Whether a checkpoint with validation `candidate` replaces the kept weights (it beats
    the best so far on the plain score, `beats_best`, and is no worse than the start on
    either validation), and the guard's decision in words."""
    worse = worse_than_start(start, candidate)
    if worse:
        return False, f"refused: below the start on the {' and '.join(worse)} validation"
    if not beats_best:
        return False, "no worse than the start, not better than the kept weights"
    return True, "admitted: no worse than the start on the plain and long-prompt validation"


def summary(run: Run) -> dict[str, Any]:
    """policy.json's `fine_tune_guard`: the scale, the final decision, the decision cost weight
    the start kept, and the start's and the selected weights' scores on both validations."""
    best = run.best.metrics
    kept = run.best.source.startswith("init")
    return {
        "long_prompt_scale": run.config.fine_tune_long_prompt_scale,
        "decision": KEPT_START if kept else f"took {run.best.source}",
        "decision_cost_weight": run.config.decision_cost_weight or 0.0,
        "start": {k: run.start[k] for k in ("validation_score", SCORE)},
        "selected": {k: best[k] for k in ("validation_score", SCORE)},
    }


def describe(record: dict[str, Any]) -> str:
    """The guard's decision as one log line, from its `fine_tune_guard` record (`summary`):
    what `train` prints and the console's training log shows."""
    start, selected = record["start"], record["selected"]
    return (
        f"fine-tune guard (prompts x{record['long_prompt_scale']:g}): {record['decision']}, "
        f"decision cost weight {record['decision_cost_weight']:g} (start: score "
        f"{start['validation_score']:.4f}, long-prompt {start[SCORE]:.4f}; selected: "
        f"{selected['validation_score']:.4f}, long-prompt {selected[SCORE]:.4f})"
    )
