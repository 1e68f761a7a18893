"""The held-out suite's table (`python -m optimizer heldout-suite`, docs/heldout-suite.md): one
row per fleet, trace and load, the zero-shot policy (and, when the report has one, the
fine-tuned policy) beside the cell's best heuristic and the oracle, means over the seeds, and
whether the issue's goal for that regime was met (issue #26). Standard library only, like every
renderer here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tools.results.model import Report
from tools.results.render import markdown_table

ROLES = ("zero-shot", "fine-tuned")


def _mean(policy: dict[str, Any], metric: str, fmt: str, scale: float = 1.0) -> str:
    return format(scale * policy[metric]["mean"], fmt)


def _goal(verdict: dict[str, Any] | None, ours: dict[str, Any] | None, best: dict[str, Any]) -> str:
    """The verdict, its margin and TTFT ratio, and the cost beside the best heuristic's: the
    issue lets a light-load TTFT above the best heuristic's stand only for a stated saving, so
    the saving (or the extra cost) is stated, though the goal itself does not count it."""
    if verdict is None or ours is None:
        return ""
    word = "met" if verdict["passed"] else "**missed**"
    shown = "p95" if "p95" in verdict["bar"] else "mean"
    ratio = verdict[f"ttft_{shown}_ratio"]
    times = "n/a" if ratio is None else f"{ratio:.2f}x"
    theirs = best["cost_per_1k_requests"]["mean"]
    cost = ours["cost_per_1k_requests"]["mean"] / theirs - 1.0 if theirs > 0 else None
    # Rounded before the sign is chosen, so a cost within half a percent reads "±0%", not "-0%".
    pct = None if cost is None else round(100 * cost)
    dearer = "" if pct is None else f", $/1k {'±0' if pct == 0 else f'{pct:+d}'}%"
    return f"{word} ({verdict['margin_pt']:+.1f} pt, {shown} TTFT {times}{dearer})"


def _each(policies: Sequence[dict[str, Any] | None], metric: str, fmt: str) -> str:
    """One metric of several policies, `a / b / c` (blank for a policy a cell lacks)."""
    return " / ".join("" if p is None else _mean(p, metric, fmt) for p in policies)


def _rows(suite: dict[str, Any], roles: Sequence[str]) -> list[list[str]]:
    rows = []
    for cell in suite["cells"]:
        best, oracle = cell["policies"][cell["best_heuristic"]], cell["policies"]["oracle"]
        shown = [cell["policies"].get(r) for r in roles] + [best]
        rows.append(
            [cell["fleet"], cell["trace"].split(".")[0], f"{cell['utilisation']:g}",
             cell["regime"],
             *("" if p is None else _mean(p, "slo_attainment", ".1f", 100) for p in shown),
             cell["best_heuristic"], _mean(oracle, "slo_attainment", ".1f", 100),
             _each(shown, "ttft_mean_ms", ",.0f"), _each(shown, "ttft_p95_ms", ",.0f"),
             _each(shown, "cost_per_1k_requests", ".3f"),
             *(_goal(cell["goals"].get(r), cell["policies"].get(r), best) for r in roles)]
        )  # fmt: skip
    return rows


def heldout_suite(reports: Sequence[Report]) -> str:
    """The suite's report(s) as one table, then the goals met per fleet."""
    parts = []
    for report in reports:
        suite = report.data
        roles = [r for r in ROLES if any(r in c["policies"] for c in suite["cells"])]
        who = " / ".join([*roles, "best"])
        header = ["fleet", "trace", "utilisation", "regime",
                  *(f"{r} att. %" for r in roles), "best heuristic att. %", "best heuristic",
                  "oracle att. %", f"TTFT mean ms ({who})", f"TTFT p95 ms ({who})",
                  f"$/1k ({who})", *(f"goal ({r})" if len(roles) > 1 else "goal"
                                     for r in roles)]  # fmt: skip
        parts.append(markdown_table(header, _rows(suite, roles)))
        config = suite["config"]
        tallies = []
        for role in roles:
            counts = [f["goals"][role] for f in suite["fleets"].values() if role in f["goals"]]
            met, cells = sum(c["passed"] for c in counts), sum(c["cells"] for c in counts)
            who = (
                f"zero-shot `{config['zero_shot']}`"
                if role == "zero-shot"
                else "fine-tuned on each fleet (one fine-tune per seed)"
            )
            tallies.append(f"{who} meets {met} of {cells} goals")
        tallies[0] = tallies[0][0].upper() + tallies[0][1:]
        parts.append(
            f"{'; '.join(tallies)}; seeds {','.join(map(str, config['seeds']))}, "
            f"{config['limit']:,} requests per replay, telemetry every "
            f"{config['telemetry_interval_s']:g} s."
        )
    return "\n\n".join(parts)
