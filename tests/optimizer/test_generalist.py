"""The shipped generalist: a name wherever a policy is named, usable at once on a fleet it
never saw, and the start of `train --init generalist`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.cli import main
from optimizer.decide.registry import GENERALIST_DIR
from optimizer.decide.scorers.learned import load_trained_policy
from optimizer.rl.replays import run_replay, scenario_job
from tests.optimizer.fleets import AZURE, MOONCAKE


@pytest.fixture(scope="module")
def unseen_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated fleet of a seed the generalist was not trained on (docs/learned-policy.md)."""
    out = tmp_path_factory.mktemp("fleet") / "unseen.yaml"
    args = ["gen-fleet", "--nodes", "15", "--sites", "6", "--seed", "4242"]
    assert main([*args, "--out", str(out)]) == 0
    return out


def test_the_generalist_ships_with_its_weights_and_record() -> None:
    for name in ("scorer.pt", "weights.pt", "policy.json"):
        assert (GENERALIST_DIR / name).is_file(), name
    record = json.loads((GENERALIST_DIR / "policy.json").read_text())
    assert len(record["training_config"]["extra_topologies"]) >= 10


def test_policies_lists_the_generalist(capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped learned policies come last, after the built-in heuristics: the generalist
    as it ships and inside its trust region."""
    assert main(["policies"]) == 0
    assert capsys.readouterr().out.split()[-2:] == ["generalist", "generalist-guarded"]


def test_simulate_takes_the_generalist_by_name_on_an_unseen_fleet(
    unseen_fleet: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    args = ["simulate", "--topology", str(unseen_fleet), "--trace", str(MOONCAKE)]
    assert main([*args, "--policy", "generalist", "--limit", "200", "--report", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["served"] == 200 and report["residency_violations"] == 0


def test_evaluate_takes_the_generalist_among_its_policies(
    unseen_fleet: Path, tmp_path: Path
) -> None:
    out = tmp_path / "e.json"
    args = ["evaluate", "--topology", str(unseen_fleet), "--trace", str(MOONCAKE), "--limit", "150"]
    assert main([*args, "--policies", "generalist,least-loaded", "--report", str(out)]) == 0
    assert set(json.loads(out.read_text())["policies"]) == {"generalist", "least-loaded"}


@pytest.mark.slow
def test_train_init_generalist_starts_from_its_weights(unseen_fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "tuned"
    args = ["train", "--topology", str(unseen_fleet), "--trace", str(AZURE), "--init", "generalist"]
    args += ["--timesteps", "256", "--validate-every", "256", "--cost-weight", "0.2"]
    assert main([*args, "--out", str(out)]) == 0
    record = json.loads((out / "policy.json").read_text())
    assert record["training_config"]["init"] == "generalist"
    assert record["training_config"]["reward"]["cost_weight"] == 0.2
    # The start is validated with the generalist's decision cost weight and without it, and
    # the fine-tune keeps the one its validation score prefers (the first on a tie) among
    # those no worse than the generalist's own on the fine-tune guard's two validations.
    trials = record["decision_cost_weight_trials"]
    assert [t["decision_cost_weight"] for t in trials] == [0.5, 0.0]
    own = trials[0]
    eligible = [
        t
        for t in trials
        if t["validation_score"] >= own["validation_score"]
        and t["validation_score_long_prompt"] >= own["validation_score_long_prompt"]
    ]
    chosen = max(eligible, key=lambda t: t["validation_score"])
    assert record["decision_cost_weight"] == chosen["decision_cost_weight"]
    start = record["validation"]["history"][0]
    assert start["timesteps"] == 0
    # The weighted start validates exactly as the shipped generalist does on the same replays
    # (TrainConfig defaults: seed 0, window 4096, utilisations 0.4, 0.9, 1.4, telemetry 10 s,
    # the midpoint of the 5-15 s training range).
    own = [
        run_replay(
            scenario_job(
                topology=str(unseen_fleet),
                trace=str(AZURE),
                policy="generalist",
                window=4096,
                utilisation=u,
                scenario_seed=10_000 + i,
                policy_seed=0,
                telemetry_interval_s=10.0,
            )
        )["slo_attainment"]
        for i, u in enumerate((0.4, 0.9, 1.4))
    ]
    assert trials[0]["slo_attainment"] == pytest.approx(sum(own) / len(own), abs=1e-12)
    assert start["slo_attainment"] == chosen["slo_attainment"]
    assert load_trained_policy(out).name == "tuned"
