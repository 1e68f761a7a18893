"""The held-out suite's table (`python -m optimizer heldout-suite`, docs/heldout-suite.md): one
row per fleet, trace and load, the zero-shot policy beside the cell's best heuristic and the
oracle, means over the seeds, and whether the issue's goal for that regime was met (issue #26).
Standard library only, like every renderer here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tools.results.model import Report
from tools.results.render import markdown_table


def _mean(policy: dict[str, Any], metric: str, fmt: str, scale: float = 1.0) -> str:
    return format(scale * policy[metric]["mean"], fmt)


def _goal(verdict: dict[str, Any] | None) -> str:
    if verdict is None:
        return ""
    word = "met" if verdict["passed"] else "**missed**"
    return f"{word} ({verdict['margin_pt']:+.1f} pt, mean TTFT {verdict['ttft_mean_ratio']:.2f}x)"


def _rows(suite: dict[str, Any]) -> list[list[str]]:
    rows = []
    for cell in suite["cells"]:
        learned, best = cell["policies"]["zero-shot"], cell["policies"][cell["best_heuristic"]]
        oracle = cell["policies"]["oracle"]
        rows.append(
            [cell["fleet"], cell["trace"].split(".")[0], f"{cell['utilisation']:g}",
             cell["regime"], _mean(learned, "slo_attainment", ".1f", 100),
             _mean(best, "slo_attainment", ".1f", 100),
             cell["best_heuristic"], _mean(oracle, "slo_attainment", ".1f", 100),
             f"{_mean(learned, 'ttft_mean_ms', ',.0f')} / {_mean(best, 'ttft_mean_ms', ',.0f')}",
             f"{_mean(learned, 'ttft_p95_ms', ',.0f')} / {_mean(best, 'ttft_p95_ms', ',.0f')}",
             f"{_mean(learned, 'cost_per_1k_requests', '.3f')} / "
             f"{_mean(best, 'cost_per_1k_requests', '.3f')}",
             _goal(cell["goals"].get("zero-shot"))]
        )  # fmt: skip
    return rows


def heldout_suite(reports: Sequence[Report]) -> str:
    """The suite's report(s) as one table, then the goals met per fleet."""
    parts = []
    for report in reports:
        suite = report.data
        header = ["fleet", "trace", "utilisation", "regime", "zero-shot att. %",
                  "best heuristic att. %", "best heuristic", "oracle att. %",
                  "TTFT mean ms (zero-shot / best)", "TTFT p95 ms (zero-shot / best)",
                  "$/1k (zero-shot / best)", "goal"]  # fmt: skip
        parts.append(markdown_table(header, _rows(suite)))
        met = sum(f["goals"]["zero-shot"]["passed"] for f in suite["fleets"].values())
        cells = sum(f["goals"]["zero-shot"]["cells"] for f in suite["fleets"].values())
        config = suite["config"]
        parts.append(
            f"Zero-shot `{config['zero_shot']}` meets {met} of {cells} goals; seeds "
            f"{','.join(map(str, config['seeds']))}, {config['limit']:,} requests per replay, "
            f"telemetry every {config['telemetry_interval_s']:g} s."
        )
    return "\n\n".join(parts)
