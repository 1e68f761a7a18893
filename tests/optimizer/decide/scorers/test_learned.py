"""policy.json's `decision_cost_weight`: the price a trained scorer puts on a candidate's
estimated cost when it decides (optimizer.rl.export.TrainedPolicy), refused when it is not a
number in range, covered by the digest a registered version records, set by `train`. That
the kernel's scores are the scorer's minus the weighted estimate is checked against the
per-node reference in test_kernel_parity.py."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from optimizer.cli import main
from optimizer.decide.registry import GENERALIST_DIR, load_policy
from optimizer.decide.scorers.learned import load_trained_policy, scorer_digest
from optimizer.errors import InputFileError
from optimizer.rl.replays import run_replay, scenario_job
from optimizer.topology_files import load_topology
from tests.optimizer.fleets import FLEET_DEMO, MOONCAKE


def _copy(tmp_path: Path, name: str, **meta: object) -> Path:
    """The shipped generalist's files in a directory of its own, policy.json updated."""
    out = tmp_path / name
    out.mkdir()
    for file in ("scorer.pt", "policy.json"):
        shutil.copy(GENERALIST_DIR / file, out / file)
    record = json.loads((out / "policy.json").read_text())
    record.update(meta)
    (out / "policy.json").write_text(json.dumps(record))
    return out


def test_the_generalist_ships_with_a_cost_weight() -> None:
    policy = load_trained_policy(GENERALIST_DIR)
    assert policy.cost_weight == 0.5


@pytest.mark.parametrize(
    "value, problem",
    [
        (-0.1, "within 0..1000"),
        (1e9, "within 0..1000"),
        ("0.5", "must be a number"),
        (True, "must be a number"),
        (None, "must be a number"),
    ],
)
def test_load_refuses_a_bad_weight_naming_the_file(
    tmp_path: Path, value: object, problem: str
) -> None:
    directory = _copy(tmp_path, "bad", decision_cost_weight=value)
    with pytest.raises(InputFileError, match=problem) as caught:
        load_trained_policy(directory)
    assert "policy.json" in str(caught.value)


def test_load_refuses_a_nan_weight(tmp_path: Path) -> None:
    directory = _copy(tmp_path, "nan")
    text = (directory / "policy.json").read_text()
    (directory / "policy.json").write_text(text[:-1] + ', "decision_cost_weight": NaN}')
    with pytest.raises(InputFileError, match="within 0..1000"):
        load_policy(str(directory), load_topology(FLEET_DEMO))


def test_the_digest_covers_the_weight(tmp_path: Path) -> None:
    scorer_only = hashlib.sha256((GENERALIST_DIR / "scorer.pt").read_bytes()).hexdigest()
    assert scorer_digest(_copy(tmp_path, "zero", decision_cost_weight=0)) == scorer_only
    half = scorer_digest(_copy(tmp_path, "half", decision_cost_weight=0.5))
    more = scorer_digest(_copy(tmp_path, "more", decision_cost_weight=0.6))
    assert len({scorer_only, half, more}) == 3
    assert scorer_digest(GENERALIST_DIR) == half


@pytest.mark.parametrize("value", ["-1", "nan", "1001", "cheap"])
def test_train_refuses_a_bad_decision_cost_weight(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["train", "--topology", str(FLEET_DEMO), "--trace", str(MOONCAKE)]
    with pytest.raises(SystemExit) as caught:
        main([*args, "--out", str(tmp_path / "o"), "--decision-cost-weight", value])
    assert caught.value.code == 2
    assert "--decision-cost-weight" in capsys.readouterr().err


def test_a_replay_of_the_generalist_applies_its_weight(tmp_path: Path) -> None:
    """The same replay with weight 0 and with the shipped 0.5: different placements, and the
    weighted one no dearer (fleet-demo, where the weight was not chosen but the canary runs).
    The scorer is judged outside its trust region, which would mask the weight's effect."""
    reports = {}
    for name, weight in (("zero", 0.0), ("shipped", 0.5)):
        job = scenario_job(
            topology=str(FLEET_DEMO),
            trace=str(MOONCAKE),
            policy=str(_copy(tmp_path, name, decision_cost_weight=weight, trust_region=False)),
            window=400,
            utilisation=0.6,
            scenario_seed=1,
            policy_seed=0,
            telemetry_interval_s=10.0,
        )
        reports[name] = run_replay(job)
    zero, shipped = reports["zero"], reports["shipped"]
    assert shipped["cost_per_1k_requests"] < zero["cost_per_1k_requests"]
