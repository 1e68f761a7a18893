"""tools/results/heldout.py: the README's held-out suite table, rendered from the committed
report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tools.results.heldout import heldout_suite
from tools.results.model import Report

SUITE = Path(__file__).parents[2] / "docs/results/reports/heldout-suite/suite.json"


def _with_cost(ratio: float) -> str:
    """The table when the first cell's zero-shot costs `ratio` x its best heuristic's."""
    data: dict[str, Any] = json.loads(SUITE.read_text())
    cell = data["cells"][0]
    best = cell["policies"][cell["best_heuristic"]]["cost_per_1k_requests"]["mean"]
    cell["policies"]["zero-shot"]["cost_per_1k_requests"]["mean"] = best * ratio
    table = heldout_suite([Report("suite", data)])
    return next(line for line in table.splitlines() if line.startswith(f"| {cell['fleet']} "))


@pytest.mark.parametrize(
    ("ratio", "shown"),
    [(0.996, "$/1k ±0%"), (1.004, "$/1k ±0%"), (0.99, "$/1k -1%"), (1.2, "$/1k +20%")],
)
def test_the_goal_states_the_cost_beside_the_best_heuristic_without_a_signed_zero(
    ratio: float, shown: str
) -> None:
    row = _with_cost(ratio)
    assert shown in row
    assert "-0%" not in row and "+0%" not in row
