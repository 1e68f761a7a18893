"""`python -m optimizer heldout-suite` on a tiny budget: the report's shape, the table, the
fine-tuned row, the same figures as `evaluate`, and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optimizer.cli import main
from optimizer.decide.registry import GENERALIST_DIR

FLEET, TRACE = "retail-edge", "azure_llm_2023_conv.csv"
BASE = ["heldout-suite", "--fleets", FLEET, "--traces", TRACE, "--limit", "30"]
CHEAP = ["--heuristics", "latency-first,weighted-score", "--zero-shot", "least-loaded"]


def _run(tmp_path: Path, *args: str, name: str = "r") -> tuple[dict[str, Any], str]:
    report = tmp_path / f"{name}.json"
    table = tmp_path / f"{name}.md"
    assert main([*BASE, *args, "--report", str(report), "--table", str(table)]) == 0
    return json.loads(report.read_text()), table.read_text()


def test_the_report_has_every_cell_policy_and_seed_and_the_table_shows_them(
    tmp_path: Path,
) -> None:
    report, table = _run(tmp_path, *CHEAP, "--seeds", "0,1", "--workers", "1")
    assert report["config"]["seeds"] == [0, 1] and report["config"]["limit"] == 30
    assert report["config"]["telemetry_interval_s"] == 10.0
    assert [c["label"] for c in report["cells"]] == ["light", "moderate", "heavy"]
    for cell in report["cells"]:
        assert cell["fleet"] == FLEET and cell["trace"] == TRACE
        assert set(cell["policies"]) == {"latency-first", "weighted-score", "zero-shot", "oracle"}
        for role, stats in cell["policies"].items():
            metrics = {"slo_attainment", "ttft_mean_ms"}
            if role != "oracle":
                metrics |= {"ttft_p95_ms", "cost_per_1k_requests"}
            assert set(stats) == metrics
            for s in stats.values():
                assert len(s["runs"]) == 2 and s["mean"] == pytest.approx(sum(s["runs"]) / 2)
        assert cell["best_heuristic"] in ("latency-first", "weighted-score")
        assert cell["regime"] in ("light", "moderate", "heavy")
        assert set(cell["goals"]) == {"zero-shot"}
        assert isinstance(cell["goals"]["zero-shot"]["passed"], bool)
    summary = report["fleets"][FLEET]
    assert summary["goals"]["zero-shot"]["cells"] == 3 and report["wall_seconds"] > 0
    rows = [line for line in table.splitlines() if line.startswith(f"| {FLEET} |")]
    assert len(rows) == 3 * 3 + 1  # zero-shot, best, oracle per cell; the fleet line
    assert sum("zero-shot: least-loaded" in r for r in rows) == 3
    assert all(("pass" in r) != ("FAIL" in r) for r in rows if "zero-shot:" in r)


def test_a_cell_has_the_figures_evaluate_prints_for_the_same_options(tmp_path: Path) -> None:
    report, _ = _run(tmp_path, *CHEAP, "--seeds", "1", "--workers", "1")
    cell = report["cells"][1]
    out = tmp_path / "evaluate.json"
    args = ["--utilisation", str(cell["utilisation"]), "--seed", "1", "--limit", "30"]
    assert (
        main(
            [
                "evaluate",
                "--topology",
                f"optimizer/topologies/heldout/{FLEET}.yaml",
                "--trace",
                f"optimizer/data/traces/{TRACE}",
                "--telemetry-interval",
                "10",
                "--policies",
                "least-loaded,weighted-score",
                *args,
                "--report",
                str(out),
            ]
        )
        == 0
    )
    evaluated = json.loads(out.read_text())
    assert evaluated["load"] == pytest.approx(cell["load"])
    for role, name in (("zero-shot", "least-loaded"), ("weighted-score", "weighted-score")):
        ours, theirs = cell["policies"][role], evaluated["policies"][name]
        assert ours["slo_attainment"]["runs"] == [theirs["slo_attainment"]]
        assert ours["ttft_mean_ms"]["runs"] == [theirs["ttft_ms"]["mean"]]
        assert ours["ttft_p95_ms"]["runs"] == [theirs["ttft_ms"]["p95"]]
    assert cell["policies"]["oracle"]["slo_attainment"]["runs"] == [
        evaluated["oracle"]["slo_attainment"]
    ]


def test_two_workers_write_the_report_one_writes(tmp_path: Path) -> None:
    one, _ = _run(tmp_path, *CHEAP, "--seeds", "0", "--workers", "1", name="one")
    two, _ = _run(tmp_path, *CHEAP, "--seeds", "0", "--workers", "2", name="two")
    for report in (one, two):
        report.pop("wall_seconds")
        report["config"].pop("workers")
    assert one == two


def test_a_fine_tuned_directory_adds_its_row_and_goal(tmp_path: Path) -> None:
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    (tuned / FLEET).symlink_to(GENERALIST_DIR)
    report, table = _run(
        tmp_path,
        "--heuristics",
        "latency-first",
        "--seeds",
        "0",
        "--limit",
        "15",
        "--workers",
        "1",
        "--fine-tuned",
        str(tuned),
    )
    for cell in report["cells"]:
        assert set(cell["goals"]) == {"zero-shot", "fine-tuned"}
        # The same weights twice: the rows agree.
        assert cell["policies"]["fine-tuned"] == cell["policies"]["zero-shot"]
    assert table.count("| fine-tuned |") == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fleets", "nowhere"], "unknown fleet nowhere"),
        (["--traces", "nothing.csv"], "unknown trace nothing.csv"),
        (["--heuristics", "oracle-ish"], "--heuristics: unknown oracle-ish"),
        (["--seeds", ","], "--seeds: give at least one seed"),
        (["--workers", "100000"], "--workers: at most"),
        (["--zero-shot", "/no/such/dir"], "--zero-shot: /no/such/dir is neither"),
    ],
)
def test_bad_options_are_refused_before_any_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code = main(["heldout-suite", *args, "--report", str(tmp_path / "r.json")])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_a_fine_tuned_directory_without_the_fleets_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*BASE, "--fine-tuned", str(tmp_path), "--report", str(tmp_path / "r.json")])
    assert code == 2 and "no fine-tuned policy for any fleet run" in capsys.readouterr().err
    (tmp_path / FLEET).mkdir()  # a fleet's directory without a trained policy in it
    code = main([*BASE, "--fine-tuned", str(tmp_path), "--report", str(tmp_path / "r.json")])
    assert code == 2
    assert f"{tmp_path / FLEET} is not a train output: no scorer.pt or policy.json" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("option", ["--zero-shot", "--fine-tuned", "--report", "--table"])
def test_a_nul_byte_in_a_path_is_refused_by_the_parser(option: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["heldout-suite", "--report", "r.json", option, "a\x00b"])
    assert exit_.value.code == 2
