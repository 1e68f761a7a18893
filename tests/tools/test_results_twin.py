"""tools/results/twin.py: the twin-suite table's counts over truths, its goals, and where a
goal fails."""

from __future__ import annotations

from typing import Any

from tools.results.model import Report
from tools.results.twin import goals, twin_suite


def _v(cls: str, status: str, truth: float = 10.0, proposed: float = 10.0) -> dict[str, Any]:
    return {"profile": "m@a", "value": "decode_step_ms", "nominal": 10.0, "truth": truth,
            "proposed": proposed, "status": status, "samples": 500, "class": cls,
            "ttft_rows": {"queue_free": 0, "queued": 500}}  # fmt: skip


def _cell(truth: int, values: list[dict[str, Any]], med: tuple[float, float]) -> dict[str, Any]:
    before = {"median_abs_rel_error": med[0], "p95_abs_rel_error": 0.3}
    after = {"median_abs_rel_error": med[1], "p95_abs_rel_error": 0.2}
    verdict = "improved" if med[1] < med[0] else "no_improvement"
    return {"fleet": "f", "trace": "mooncake_synthetic.jsonl", "traffic": "concentrated",
            "policy": "weighted-score", "utilisation": 1.5, "truth_seed": truth,
            "values": values, "before": {"ttft": before}, "after": {"ttft": after},
            "verdict": {"verdict": verdict, "reason": "ttft median worse"}}  # fmt: skip


def test_a_run_meets_its_goals_only_when_nothing_is_missed_moved_or_worse() -> None:
    right = [_v("recovered", "fitted", 12.0, 12.5), _v("kept", "insufficient_data")]
    assert goals(_cell(1, right, (0.05, 0.01))) == {
        "recovered": True,
        "no_move": True,
        "not_worse": True,
    }
    wrong = [_v("missed", "fitted", 10.0, 14.0), _v("moved", "not_identifiable", 10.0, 13.0)]
    assert goals(_cell(1, wrong, (0.01, 0.07))) == {
        "recovered": False,
        "no_move": False,
        "not_worse": False,
    }


def test_the_table_sums_over_truths_and_says_where_each_goal_fails() -> None:
    first = [
        _v("recovered", "fitted", 12.0, 12.5),
        _v("kept", "insufficient_data"),
        _v("kept", "not_identifiable", 12.0, 10.0),  # the truth moved, the data cannot see it
    ]
    second = [_v("missed", "agrees_with_nominal", 12.0, 10.0), _v("recovered", "fitted")]
    table = twin_suite(
        [
            Report(
                "grid", {"a": _cell(27, second, (0.01, 0.03)), "b": _cell(26, first, (0.05, 0.01))}
            )
        ]
    )
    row = next(line for line in table.splitlines() if line.startswith("| f |"))
    cols = [c.strip() for c in row.strip("|").split("|")]
    # 2 truths; fitted 2 of 5; pinned (fitted + agrees_with_nominal) 3, recovered 2, missed 1,
    # moved 0, and one kept value whose truth is 20% from nominal
    assert cols[4:10] == ["2", "2/5", "2/3", "1", "0", "1"]
    assert cols[10] == "3.0% → 2.0%"  # means over the truths
    assert cols[12:] == ["1/2", "**1/2**", "2/2", "**1/2**"]
    assert "Goals met in 1 of 2 runs" in table
    assert (
        "- f, truth 27, concentrated (weighted-score), 1.5: m@a decode_step_ms missed "
        "(agrees_with_nominal, 500 requests, 0 queue-free TTFT rows of 500)" in table
    )
    assert "proposed 10 (0.83x the truth); verdict no_improvement" in table
    assert "held-out TTFT error median 1.0% -> 3.0%" in table
