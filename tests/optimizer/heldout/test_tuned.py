"""Where the suite finds fine-tuned policies: one per fleet, or one per fleet and seed, each
replay seed judged with its own; a layout missing a seed is refused before any replay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from optimizer.cli import main
from optimizer.decide.registry import GENERALIST_DIR
from optimizer.heldout.run import FINE_TUNED, SuiteConfig, plan
from optimizer.heldout.tuned import fine_tuned_policies

FLEET, TRACE = "retail-edge", "azure_llm_2023_conv.csv"


def _copy(to: Path, cost_weight: float) -> Path:
    """The generalist with another decision cost weight: a policy that decides otherwise."""
    shutil.copytree(GENERALIST_DIR, to)
    policy = json.loads((to / "policy.json").read_text())
    policy["decision_cost_weight"] = cost_weight
    (to / "policy.json").write_text(json.dumps(policy))
    return to


def test_each_seed_is_judged_with_the_fine_tune_of_that_seed(tmp_path: Path) -> None:
    fleet_dir = tmp_path / "tuned" / FLEET
    fleet_dir.mkdir(parents=True)
    (fleet_dir / "seed-0").symlink_to(GENERALIST_DIR)
    other = _copy(fleet_dir / "seed-1", 5.0)
    config = SuiteConfig(
        heuristics=("latency-first",),
        zero_shot=str(other),
        fine_tuned=str(tmp_path / "tuned"),
        seeds=(0, 1),
        limit=15,
        fleets=(FLEET,),
        traces=(TRACE,),
        workers=1,
    )
    runs = plan(config)
    policies = {
        key[2]: job for key, job in zip(runs.keys, runs.jobs, strict=True) if key[1] == FINE_TUNED
    }
    assert str(fleet_dir / "seed-0") in json.dumps(policies[0])
    assert str(fleet_dir / "seed-1") in json.dumps(policies[1])
    report = tmp_path / "r.json"
    argv = ["heldout-suite", "--fleets", FLEET, "--traces", TRACE, "--limit", "15"]
    argv += ["--heuristics", "latency-first", "--seeds", "0,1", "--workers", "1"]
    argv += ["--zero-shot", str(other), "--fine-tuned", str(tmp_path / "tuned")]
    assert main([*argv, "--report", str(report)]) == 0
    for cell in json.loads(report.read_text())["cells"]:
        tuned, zero = cell["policies"]["fine-tuned"], cell["policies"]["zero-shot"]
        # Seed 1 ran the same policy in both roles.
        for metric, stats in tuned.items():
            assert stats["runs"][1] == zero[metric]["runs"][1]


def test_a_seed_without_its_fine_tune_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet_dir = tmp_path / FLEET
    fleet_dir.mkdir()
    (fleet_dir / "seed-0").symlink_to(GENERALIST_DIR)
    argv = ["heldout-suite", "--fleets", FLEET, "--traces", TRACE, "--seeds", "0,1"]
    code = main([*argv, "--fine-tuned", str(tmp_path), "--report", str(tmp_path / "r.json")])
    assert code == 2
    assert f"{fleet_dir / 'seed-1'} is neither a policy name nor a directory" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "r.json").exists()


def test_one_fine_tune_for_a_fleet_judges_every_seed(tmp_path: Path) -> None:
    (tmp_path / FLEET).symlink_to(GENERALIST_DIR)
    found, problems = fine_tuned_policies(tmp_path, [FLEET, "llmd-h100-pool"], [0, 1, 2])
    assert problems == []
    assert found == {FLEET: dict.fromkeys((0, 1, 2), str(tmp_path / FLEET))}


def test_a_root_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    found, problems = fine_tuned_policies(tmp_path / "nope", [FLEET], [0])
    assert found == {} and problems == [f"--fine-tuned: {tmp_path / 'nope'} is not a directory"]
