"""`python -m tools.results`: the committed docs/results/ pages and the README's results table
are exactly what the committed reports render to, and the renderers read reports right."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tools.results.__main__ import main
from tools.results.build import build, stale
from tools.results.model import Report
from tools.results.registry import PAGES, README_TABLE, TABLES
from tools.results.render import comparison, deciders, decision_latency


def test_the_committed_results_are_what_the_reports_render_to() -> None:
    assert stale(REPO) == [], "run `make results` and commit what it writes"
    assert main(["--check"]) == 0


def test_every_table_renders_from_reports_of_its_own_with_its_command() -> None:
    files = build(REPO)
    slugs = [table.slug for table in TABLES]
    assert len(slugs) == len(set(slugs))
    for table in TABLES:
        page = files[f"docs/results/{table.page}.md"]
        assert f"## {table.title}" in page
        assert table.script in page, "the command is printed above its table"
        assert f"docs/results/reports/{table.slug}/" in table.script
    assert {f"docs/results/{page.slug}.md" for page in PAGES} < set(files)
    assert f"<!-- results:{README_TABLE} -->\n| fleet |" in files["README.md"]


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "docs" / "results", tmp_path / "docs" / "results")
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    return tmp_path


def test_a_changed_report_makes_its_page_and_the_readme_stale(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    report = sorted((root / "docs/results/reports" / README_TABLE).glob("*.json"))[0]
    data = json.loads(report.read_text())
    # The README's table is the held-out suite's (tools/results/heldout.py).
    data["cells"][0]["policies"]["zero-shot"]["slo_attainment"]["mean"] -= 0.05
    report.write_text(json.dumps(data))
    page = next(t.page for t in TABLES if t.slug == README_TABLE)
    assert stale(root) == [f"docs/results/{page}.md", "README.md"]


def test_a_table_without_reports_names_the_command_that_makes_them(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    for old in (root / "docs/results/reports" / TABLES[0].slug).glob("*.json"):
        old.unlink()
    with pytest.raises(ValueError, match=f"--run {TABLES[0].slug}"):
        build(root)


def _run(policies: dict[str, float], oracle: float = 0.99) -> dict[str, Any]:
    """An `evaluate` report in which each policy reaches the given attainment."""
    stats = {
        name: {
            "slo_attainment": att,
            "ttft_ms": {"mean": 1000 / att, "p95": 4000 / att},
            "cost_per_1k_requests": 2.0,
        }
        for name, att in policies.items()
    }
    return {"policies": stats, "oracle": {"slo_attainment": oracle}, "load": 2, "utilisation": 1}


def test_comparison_takes_the_best_other_policy_over_the_seeds_and_classes_heavy_load() -> None:
    reports = [
        # latency-first wins seed 0, weighted-score wins on the mean over both seeds.
        Report("fleet-a-s0", _run({"mine": 0.80, "latency-first": 0.82, "weighted-score": 0.81})),
        Report("fleet-a-s1", _run({"mine": 0.80, "latency-first": 0.70, "weighted-score": 0.81})),
        Report("fleet-b-s0", _run({"mine": 0.97, "latency-first": 0.96})),
    ]
    rows = comparison("mine")(reports).splitlines()[2:4]
    a, b = ([cell.strip() for cell in row.strip("|").split("|")] for row in rows)
    assert a[0] == "fleet-a" and a[5] == "weighted-score 81.00 ± 0.00" and a[6] == "-1.00"
    assert a[2] == "heavy"  # 81% < 85% of the oracle's 99%
    assert b[0] == "fleet-b" and b[2] == "moderate" and b[6] == "+1.00"
    assert a[4] == "80.00 ± 0.00"


def test_comparison_refuses_a_report_of_a_sweep_without_a_seed_in_its_name() -> None:
    with pytest.raises(ValueError, match="GROUP-sSEED"):
        comparison("mine")([Report("fleet-a", _run({"mine": 0.9, "other": 0.8}))])


def test_decision_latency_has_a_row_per_policy_and_decision_path() -> None:
    figures = {"8": {"p50_us": 1.5, "p99_us": 3.0}, "1000": {"p50_us": 40.0, "p99_us": 90.25}}
    table = decision_latency([Report("f", {"kernel": {"random": figures}, "ref": {}})])
    assert "| random | kernel | 1.5 / 3.0 | 40.0 / 90.2 |" in table
    assert "| random | ref |  |  |" in table


def _replay(k: int, shared: bool, seed: int, attainment: float) -> dict[str, Any]:
    return {"fleet": "f", "utilisation": 0.9, "seed": seed, "policy": "p", "deciders": k,
            "shared_view": shared, "slo_attainment": attainment, "ttft_mean_ms": 1000.0 * k,
            "prefix_hit_rate": 0.1 / k}  # fmt: skip


def test_the_deciders_table_averages_seeds_and_counts_points_from_one_decider() -> None:
    runs = [
        _replay(1, False, 0, 0.90),
        _replay(1, False, 1, 0.80),
        _replay(4, False, 0, 0.70),
        _replay(4, False, 1, 0.60),
        _replay(4, True, 0, 0.90),
        _replay(4, True, 1, 0.80),
    ]
    table = deciders([Report("grid", {str(i): run for i, run in enumerate(runs)})])
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    # One decider's view is shared already: its row shows the same figures on both sides.
    assert rows[0][3:9] == ["1", "2", "85.0%", "+0.0 pt", "85.0%", "+0.0 pt"]
    assert rows[1][3:9] == ["4", "2", "65.0%", "-20.0 pt", "85.0%", "+0.0 pt"]
    assert rows[1][9:12] == ["4,000", "4,000", "0.025"]
