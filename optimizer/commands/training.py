"""`train`: imitation, PPO, validation and export (`optimizer.rl.train`), with a progress bar
and a log line per validation."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from optimizer.commands.replay import progress_shown
from optimizer.errors import InputFileError
from optimizer.heldout.guard import refuse_heldout
from optimizer.rl import fine_tune_guard


def _format_progress(metrics: dict[str, Any]) -> str | None:
    """A line for the training log: baselines, validations and the end of imitation."""
    if metrics["phase"] == "baselines":
        return (
            f"baselines on validation (load {metrics['validation_load']:.3g}x on average, "
            f"utilisations {', '.join(f'{u:g}' for u in metrics['validation_utilisations'])}): "
            f"teacher {metrics['teacher_attainment']:.2%}, best heuristic "
            f"{metrics['best_heuristic']} {metrics['best_heuristic_attainment']:.2%}"
        )
    if metrics.get("event") == "fine_tune_guard":
        return fine_tune_guard.describe(metrics)
    if metrics.get("event") != "validation":
        return None
    return _format_validation(metrics)


def _format_validation(metrics: dict[str, Any]) -> str:
    """A validation's line; a guarded fine-tune's adds the long-prompt validation and, after
    the start, the guard's decision (`optimizer.rl.fine_tune_guard`)."""
    long_prompt = ""
    if "validation_score_long_prompt" in metrics:
        long_prompt = (
            f", long-prompt attainment {metrics['slo_attainment_long_prompt']:.2%} "
            f"score {metrics['validation_score_long_prompt']:.4f}"
        )
    guard = f"; guard {metrics['guard']}" if "guard" in metrics else ""
    return (
        f"validation at {metrics['timesteps']}: attainment {metrics['slo_attainment']:.2%} "
        f"(teacher {metrics['teacher_attainment']:.2%}, best heuristic "
        f"{metrics['best_heuristic_attainment']:.2%}), p95 TTFT {metrics['ttft_p95_ms']:.0f} ms, "
        f"mean TTFT excess {metrics['ttft_mean_excess']:.3f}, "
        f"$/1k {metrics['cost_per_1k_requests']:.3f} (excess {metrics['cost_excess']:.3f}), "
        f"decision cost weight {metrics.get('decision_cost_weight', 0.0):g}, "
        f"score {metrics['validation_score']:.4f}{long_prompt}"
        + (" (best)" if metrics["best"] else "")
        + guard
    )


def cmd_train(args: argparse.Namespace) -> int:
    # Training and model selection never see the held-out suite (issue #26).
    refuse_heldout(
        [args.topology, *args.extra_topologies],
        allow_fine_tune=args.heldout_fine_tune,
        init=args.init,
    )
    low, high = args.prompt_scale
    if low > high:
        print(
            f"error: --prompt-scale LOW HIGH needs LOW <= HIGH, got {low:g} {high:g}",
            file=sys.stderr,
        )
        return 2
    # Imported here: torch and stable-baselines3 are slow to import and only training needs them.
    from tqdm import tqdm

    from optimizer.rl.config import TrainConfig
    from optimizer.rl.train import train

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputFileError(args.out, [f"{out}: --out must be a directory, and this is a file"])
    config = TrainConfig(
        topology=args.topology,
        trace=args.trace,
        out=args.out,
        extra_topologies=tuple(args.extra_topologies),
        init=args.init,
        timesteps=args.timesteps,
        seed=args.seed,
        teacher=args.teacher,
        bc_steps=args.bc_steps,
        bc_epochs=args.bc_epochs,
        validate_every=args.validate_every,
        prompt_scale=tuple(args.prompt_scale),
        decision_cost_weight=args.decision_cost_weight,
        eval_trace=args.eval_trace,
        eval_loads=tuple(args.eval_loads),
        eval_seeds=tuple(args.eval_seeds),
    )
    if args.cost_weight is not None:
        config.reward = dataclasses.replace(config.reward, cost_weight=args.cost_weight)
    bar = tqdm(total=1000, desc="train", unit="‰", disable=not progress_shown(), leave=False)

    def progress(fraction: float, metrics: dict[str, Any]) -> None:
        bar.update(int(fraction * 1000) - bar.n)
        if "approx_kl" in metrics:
            bar.set_postfix(
                steps=metrics["timesteps"],
                kl=f"{metrics['approx_kl']:.4f}",
                sps=f"{metrics['steps_per_s']:.0f}",
                refresh=False,
            )
        line = _format_progress(metrics)
        if line is not None:
            bar.write(line)

    result = train(config, progress)
    bar.close()
    if result.evaluation is not None:
        from optimizer.rl.evaluate import format_evaluation

        print(format_evaluation(result.evaluation))
    if result.below_baseline:
        best = result.baselines["best_heuristic"]
        print(
            f"warning: the trained policy validates at {result.validation['slo_attainment']:.2%}, "
            f"below the best heuristic ({best['name']}, {best['slo_attainment']:.2%})"
        )
    print(f"wrote {result.out / 'scorer.pt'} and policy.json in {result.wall_seconds:.0f} s")
    return 0
