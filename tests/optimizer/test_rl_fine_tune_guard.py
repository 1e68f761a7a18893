"""The fine-tune guard (`optimizer.rl.fine_tune_guard`, issue #26): `train --init P` also
validates on a long-prompt variant of its validation draws, and a checkpoint replaces the start
only if it is no worse than the start on both validations; training without `--init` is not
guarded."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from optimizer.cli import main
from optimizer.decide.state.features import N_FEATURES
from optimizer.rl import fine_tune_guard as guard
from optimizer.rl.config import TrainConfig
from optimizer.rl.replays import Job, inline_map, run_replay, scenario_job
from optimizer.rl.train import train
from optimizer.rl.validation import choose_start
from tests.optimizer.fleets import AZURE, FLEET_DEMO
from tests.optimizer.training import tiny_config


@pytest.fixture(scope="module")
def short_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 300 requests of the Azure conversation trace: windows of it replay in
    moments."""
    rows = AZURE.read_text(encoding="utf-8").splitlines()[:301]
    path = tmp_path_factory.mktemp("trace") / "azure-300.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _config(trace: Path, out: Path, init: str | None) -> TrainConfig:
    return tiny_config(FLEET_DEMO, trace, out, init=init, decision_cost_weight=0.0)


def _shifted(long_prompt_shift: float, jobs_seen: list[Job]) -> Any:
    """Runs the real replays (as the console's Celery fan-out would); a checkpoint's (not the
    start's) attainment is raised 10 points on the plain validation, so that it beats the start
    there, and moved `long_prompt_shift` on the long-prompt variant. With `_config`, PPO's first
    update comes after a 512-step rollout, so the checkpoint at 128 steps has the start's
    weights and the shifts alone separate them."""

    def map_replays(jobs: Sequence[Job]) -> list[dict[str, Any]]:
        jobs_seen.extend(jobs)
        results = inline_map(jobs)
        for job, result in zip(jobs, results, strict=True):
            checkpoint = Path(job["policy"]).parent.name == "validation"
            if checkpoint and not Path(job["policy"]).name.startswith("start"):
                long_prompt = job["kind"] == "scenario" and job["prompt_scale"] is not None
                result["slo_attainment"] += long_prompt_shift if long_prompt else 0.1
        return results

    return map_replays


def _scores(directory: Path) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    rows = torch.randn(30, N_FEATURES, generator=generator)
    return torch.jit.load(str(directory / "scorer.pt"))(rows, torch.ones(30, dtype=torch.bool))


def test_admit_needs_no_worse_than_the_start_on_both_validations() -> None:
    start = {"validation_score": 0.80, guard.SCORE: 0.60}
    better_plain_worse_long = {"validation_score": 0.85, guard.SCORE: 0.59}
    assert guard.admit(start, better_plain_worse_long, beats_best=True) == (
        False,
        "refused: below the start on the long-prompt validation",
    )
    both = {"validation_score": 0.79, guard.SCORE: 0.50}
    assert guard.admit(start, both, beats_best=False)[1].endswith(
        "plain and long-prompt validation"
    )
    equal_long = {"validation_score": 0.85, guard.SCORE: 0.60}
    assert guard.admit(start, equal_long, beats_best=True)[0]
    assert not guard.admit(start, equal_long, beats_best=False)[0]


def test_the_start_keeps_the_init_policys_cost_weight_unless_another_is_no_worse_on_both() -> None:
    # mooncake-long-context, seed 0: 0 validates better than the generalist's 0.5 on the plain
    # draws and (barely) worse on the long-prompt ones.
    own = (0.5, {"validation_score": 0.6796, guard.SCORE: 0.6123})
    zero = (0.0, {"validation_score": 0.6894, guard.SCORE: 0.6121})
    assert choose_start([own, zero], guarded=True) == own
    assert choose_start([own, zero], guarded=False) == zero
    no_worse = (0.0, {"validation_score": 0.6894, guard.SCORE: 0.6123})
    assert choose_start([own, no_worse], guarded=True) == no_worse


def test_the_long_prompt_variant_replays_the_same_draws_with_longer_prompts() -> None:
    job = scenario_job(
        topology=str(FLEET_DEMO),
        trace=str(AZURE),
        policy="least-loaded",
        window=256,
        utilisation=0.9,
        scenario_seed=10_000,
    )
    plain, scaled = run_replay(job), run_replay(job | {"prompt_scale": 8.0})
    # The same utilisation of the fleet's capacity: longer prompts arrive more slowly.
    assert scaled["utilisation"] == plain["utilisation"] == pytest.approx(0.9)
    assert scaled["load"] < plain["load"] / 1.5


def test_a_fine_tune_worse_on_long_prompts_keeps_the_start(
    short_trace: Path, tmp_path: Path
) -> None:
    jobs: list[Job] = []
    result = train(
        _config(short_trace, tmp_path / "tuned", "generalist"),
        map_replays=_shifted(-0.1, jobs),
    )
    assert {job.get("prompt_scale") for job in jobs} == {None, 8.0}
    meta = json.loads((result.out / "policy.json").read_text())
    checkpoints = [h for h in meta["validation"]["history"] if h["timesteps"]]
    assert checkpoints and all(
        h["guard"].startswith("refused: below the start on the long") for h in checkpoints
    )
    assert all("validation_score_long_prompt" in h for h in meta["validation"]["history"])
    assert meta["selected_weights"] == "init:generalist"
    assert meta["fine_tune_guard"]["decision"] == guard.KEPT_START
    assert meta["fine_tune_guard"]["long_prompt_scale"] == 8.0
    start = result.out / "checkpoints" / "validation" / "start"
    assert torch.equal(_scores(result.out), _scores(start))


def test_a_fine_tune_no_worse_on_either_takes_the_checkpoint(
    short_trace: Path, tmp_path: Path
) -> None:
    result = train(
        _config(short_trace, tmp_path / "tuned", "generalist"), map_replays=_shifted(0.0, [])
    )
    meta = json.loads((result.out / "policy.json").read_text())
    assert meta["selected_weights"] == "ppo@128"
    assert meta["fine_tune_guard"]["decision"] == "took ppo@128"
    first = meta["validation"]["history"][1]
    assert first["guard"].startswith("admitted") and first["best"]
    chosen = result.out / "checkpoints" / "validation" / "128"
    assert torch.equal(_scores(result.out), _scores(chosen))


def test_training_without_init_is_not_guarded(short_trace: Path, tmp_path: Path) -> None:
    jobs: list[Job] = []
    result = train(
        _config(short_trace, tmp_path / "scratch", None), map_replays=_shifted(-0.1, jobs)
    )
    assert {job.get("prompt_scale") for job in jobs} == {None}
    meta = json.loads((result.out / "policy.json").read_text())
    # The plain validation alone picks the weights: the checkpoint's plain gain wins.
    assert meta["selected_weights"] == "ppo@128"
    assert "fine_tune_guard" not in meta
    assert not any(
        "guard" in h or "validation_score_long_prompt" in h for h in meta["validation"]["history"]
    )


def test_the_train_log_says_which_decision_the_guard_took(
    short_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tuned"
    args = ["train", "--topology", str(FLEET_DEMO), "--trace", str(short_trace)]
    args += ["--init", "generalist", "--timesteps", "256", "--validate-every", "2048"]
    assert main([*args, "--out", str(out)]) == 0
    log = capsys.readouterr().out
    record = json.loads((out / "policy.json").read_text())
    decision = record["fine_tune_guard"]["decision"]
    assert f"fine-tune guard (prompts x8): {decision}, decision cost weight" in log
    assert "long-prompt attainment" in log and "; guard " in log
    # Both decision cost weights were validated on both, and the guard chose between them.
    trials = [(t["decision_cost_weight"], t) for t in record["decision_cost_weight_trials"]]
    assert [w for w, _ in trials] == [0.5, 0.0]
    assert record["decision_cost_weight"] == choose_start(trials, guarded=True)[0]
    assert record["fine_tune_guard"]["decision_cost_weight"] == record["decision_cost_weight"]
