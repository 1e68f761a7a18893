"""The held-out suite's report as Markdown: per cell the zero-shot policy, the fine-tuned one
(when the run had it), the best heuristic and the oracle, with attainment, mean and p95 TTFT and
cost per 1k requests as mean ± standard deviation over the seeds, and whether each learned
policy met its goal; then one line per fleet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.heldout.run import FINE_TUNED, ZERO_SHOT
from optimizer.rl.replays import ORACLE


def _cell(stats: dict[str, Any] | None, scale: float, digits: int) -> str:
    if stats is None:
        return ""
    return f"{scale * stats['mean']:,.{digits}f} ± {scale * stats['std']:,.{digits}f}"


def _goal(verdict: dict[str, Any] | None) -> str:
    if verdict is None:
        return ""
    ratio = verdict["ttft_mean_ratio"]
    p95 = verdict["ttft_p95_ratio"]
    shown = "p95" if "p95" in verdict["bar"] else "mean"
    value = p95 if shown == "p95" else ratio
    times = "n/a" if value is None else f"{value:.2f}x"
    word = "pass" if verdict["passed"] else "**FAIL**"
    return f"{word} ({verdict['margin_pt']:+.2f} pt, {shown} TTFT {times}; bar {verdict['bar']})"


def _row(cell: dict[str, Any], who: str, role: str, goal: str) -> str:
    stats = cell["policies"].get(role, {})
    return (
        f"| {cell['fleet']} | {Path(cell['trace']).stem} | "
        f"{cell['utilisation']:g} ({cell['load']:.3g}x) | {cell['regime']} | {who} | "
        f"{_cell(stats.get('slo_attainment'), 100.0, 2)} | "
        f"{_cell(stats.get('ttft_mean_ms'), 1.0, 0)} | "
        f"{_cell(stats.get('ttft_p95_ms'), 1.0, 0)} | "
        f"{_cell(stats.get('cost_per_1k_requests'), 1.0, 3)} | {goal} |"
    )


def render(report: dict[str, Any]) -> str:
    """The report's Markdown tables (see the module docstring)."""
    config = report["config"]
    seeds = ",".join(str(s) for s in config["seeds"])
    lines = [
        f"Held-out suite: seeds {seeds}, first {config['limit']:,} requests of each trace, "
        f"telemetry every {config['telemetry_interval_s']} s, zero-shot `{config['zero_shot']}`"
        + (f", fine-tuned `{config['fine_tuned']}`" if config["fine_tuned"] else "")
        + f"; wall time {report['wall_seconds']:.0f} s.",
        "",
        "| fleet | trace | utilisation (load) | regime | policy | SLO attainment (%) "
        "| TTFT mean (ms) | TTFT p95 (ms) | USD / 1k | goal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in report["cells"]:
        goals = cell["goals"]
        lines.append(
            _row(cell, f"zero-shot: {config['zero_shot']}", ZERO_SHOT, _goal(goals.get(ZERO_SHOT)))
        )
        if FINE_TUNED in cell["policies"]:
            lines.append(_row(cell, "fine-tuned", FINE_TUNED, _goal(goals.get(FINE_TUNED))))
        best = cell["best_heuristic"]
        lines.append(_row(cell, f"best: {best}", best, ""))
        lines.append(_row(cell, "oracle (limit)", ORACLE, ""))
    lines += [
        "",
        "| fleet | regimes reached | zero-shot goals met | fine-tuned goals met |",
        "|---|---|---|---|",
    ]
    for fleet, entry in report["fleets"].items():
        tallies = [entry["goals"].get(role) for role in (ZERO_SHOT, FINE_TUNED)]
        shown = [f"{t['passed']} of {t['cells']}" if t else "n/a" for t in tallies]
        regimes = ", ".join(entry["regimes"]) + ("" if entry["every_regime"] else " (incomplete)")
        lines.append(f"| {fleet} | {regimes} | {shown[0]} | {shown[1]} |")
    return "\n".join(lines) + "\n"
