"""`heldout-suite --reuse REPORT`: runs an earlier report holds are taken, not replayed, and the
report is the one a full run writes; a report run otherwise, or whose runs today's code does
not replay the same, is refused before anything is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from optimizer.cli import main
from optimizer.decide.registry import GENERALIST_DIR
from optimizer.heldout.reuse import spread

FLEET, TRACE = "retail-edge", "azure_llm_2023_conv.csv"
BASE = ["heldout-suite", "--fleets", FLEET, "--traces", TRACE, "--workers", "1"]
CHEAP = ["--heuristics", "latency-first,weighted-score", "--zero-shot", "least-loaded"]


def _run(tmp_path: Path, name: str, *args: str) -> dict[str, Any]:
    report = tmp_path / f"{name}.json"
    assert main([*BASE, *args, "--report", str(report)]) == 0
    return json.loads(report.read_text())


def _tuned(tmp_path: Path) -> str:
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    (tuned / FLEET).symlink_to(GENERALIST_DIR)
    return str(tuned)


def test_a_reused_report_is_the_report_a_full_run_writes(tmp_path: Path) -> None:
    run = [*CHEAP, "--seeds", "0,1", "--limit", "20"]
    earlier = _run(tmp_path, "earlier", *run)
    assert earlier["config"]["replays_reused"] == 0 and earlier["config"]["reused_from"] is None
    tuned = _tuned(tmp_path)
    reused = _run(
        tmp_path, "reused", *run, "--fine-tuned", tuned, "--reuse", str(tmp_path / "earlier.json")
    )
    full = _run(tmp_path, "full", *run, "--fine-tuned", tuned)
    # 3 cells x 2 seeds x (two heuristics, the zero-shot, the oracle) taken; the fine-tuned run.
    assert reused["config"]["replays_reused"] == 3 * 2 * 4
    assert reused["config"]["reuse_checked"] == 10  # the default, replayed again and equal
    assert reused["config"]["reused_from"] == str(tmp_path / "earlier.json")
    assert reused["cells"] == full["cells"] and reused["fleets"] == full["fleets"]
    for cell, before in zip(reused["cells"], earlier["cells"], strict=True):
        assert set(cell["policies"]) == {*before["policies"], "fine-tuned"}


def test_a_different_zero_shot_is_replayed_not_taken(tmp_path: Path) -> None:
    _run(tmp_path, "earlier", *CHEAP, "--seeds", "0", "--limit", "20")
    run = ["--heuristics", "latency-first,weighted-score", "--zero-shot", "round-robin",
           "--seeds", "0,1", "--limit", "20"]  # fmt: skip
    other = _run(tmp_path, "other", *run, "--reuse", str(tmp_path / "earlier.json"))
    # Only seed 0's heuristics and oracle: 3 cells x 3 runs.
    assert other["config"]["replays_reused"] == 3 * 3
    assert other["config"]["reuse_checked"] == 3 * 3
    assert other["cells"] == _run(tmp_path, "direct", *run)["cells"]


def test_fine_tunes_remade_into_the_same_directory_are_replayed_not_taken(
    tmp_path: Path,
) -> None:
    tuned = tmp_path / "tuned"
    shutil.copytree(GENERALIST_DIR, tuned / FLEET)
    run = [*CHEAP, "--seeds", "0", "--limit", "20", "--fine-tuned", str(tuned)]
    earlier = _run(tmp_path, "earlier", *run)
    files = earlier["config"]["policy_files"]
    assert files["zero-shot"] is None and len(files["fine-tuned"]) == 64  # a heuristic; sha256
    again = _run(tmp_path, "again", *run, "--reuse", str(tmp_path / "earlier.json"))
    assert again["config"]["replays_reused"] == 3 * 5  # every run, the fine-tuned's too
    # The same directory, a re-made fine-tune: its runs are replayed, the others taken.
    policy = tuned / FLEET / "policy.json"
    policy.write_text(json.dumps(json.loads(policy.read_text()) | {"decision_cost_weight": 3.0}))
    remade = _run(tmp_path, "remade", *run, "--reuse", str(tmp_path / "earlier.json"))
    assert remade["config"]["replays_reused"] == 3 * 4
    assert remade["config"]["policy_files"]["fine-tuned"] != files["fine-tuned"]
    # A report written before digests lends no trained policy's run (a heuristic's, here the
    # zero-shot, has no files and is still taken).
    del remade["config"]["policy_files"]
    (tmp_path / "old.json").write_text(json.dumps(remade))
    old = _run(tmp_path, "old", *run, "--reuse", str(tmp_path / "old.json"))
    assert old["config"]["replays_reused"] == 3 * 4


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (None, ["--limit", "15"], "not comparable: limit 20 there, 15 here"),
        (None, ["--telemetry-interval", "5"], "telemetry interval 10.0 there, 5.0 here"),
        ("{not json", [], "not JSON"),
        ('{"suite": "heldout"}', [], "not a heldout-suite report"),
        ('{"suite": "heldout", "cells": [{"fleet": 1}], "config": {"limit": 20, '
         '"telemetry_interval_s": 10.0}}', [], "not a heldout-suite report"),
        ("[1, 2]", [], "not a heldout-suite report"),
    ],
)  # fmt: skip
def test_a_report_that_cannot_be_reused_is_refused_before_any_replay(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    args: list[str],
    message: str,
) -> None:
    earlier = tmp_path / "earlier.json"
    if content is None:
        _run(tmp_path, "earlier", *CHEAP, "--seeds", "0", "--limit", "20")
    else:
        earlier.write_text(content)
    out = tmp_path / "out.json"
    argv = [*BASE, *CHEAP, "--seeds", "0", "--limit", "20", *args]
    code = main([*argv, "--reuse", str(earlier), "--report", str(out)])
    assert code == 2 and message in capsys.readouterr().err
    assert not out.exists()


def test_a_missing_report_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*BASE, "--reuse", str(tmp_path / "nope.json"), "--report", str(tmp_path / "r")])
    assert code == 2 and "cannot read" in capsys.readouterr().err


def test_a_report_this_code_does_not_replay_the_same_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = [*CHEAP, "--seeds", "0", "--limit", "20"]
    earlier = _run(tmp_path, "earlier", *run)
    for cell in earlier["cells"]:  # as if another version of the code had made it
        for stats in cell["policies"].values():
            stats["slo_attainment"]["runs"] = [v - 0.125 for v in stats["slo_attainment"]["runs"]]
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(earlier))
    out = tmp_path / "out.json"
    code = main([*BASE, *run, "--reuse", str(changed), "--report", str(out)])
    assert code == 2 and "does not hold what this code replays" in capsys.readouterr().err
    assert not out.exists()
    # --reuse-check 0 trusts the report: its figures are taken as they are.
    trusted = _run(tmp_path, "trusted", *run, "--reuse", str(changed), "--reuse-check", "0")
    assert trusted["config"]["reuse_checked"] == 0
    assert trusted["config"]["replays_reused"] == 3 * 4
    for cell, tampered in zip(trusted["cells"], earlier["cells"], strict=True):
        for role, stats in tampered["policies"].items():
            assert (
                cell["policies"][role]["slo_attainment"]["runs"] == stats["slo_attainment"]["runs"]
            )


def test_reuse_check_needs_reuse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*BASE, "--reuse-check", "3", "--report", str(tmp_path / "r.json")])
    assert code == 2 and "--reuse-check: only with --reuse" in capsys.readouterr().err


def test_the_checked_runs_are_spread_over_the_plan() -> None:
    assert spread(list(range(10)), 3) == [0, 4, 9]
    assert spread(list(range(10)), 0) == []
    assert spread([2, 5], 10) == [2, 5]
