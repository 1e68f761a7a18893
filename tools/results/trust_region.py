"""The trust region's table (docs/learned-policy.md, "The trust region"): per held-out cell,
the generalist guarded (`generalist-guarded`) and bare (as it ships), beside its anchor
(weighted-score) and the cell's best heuristic, means over the seeds, and whether the issue's
light-load TTFT goal (mean and p95 within 10% of the best heuristic's) holds for the guarded
one.

Reports: `guarded-*.json`, held-out suite reports of `generalist-guarded` (the shipped
generalist inside its trust region), and `bare.json`, one of `generalist` as it ships, on the
same seeds and requests.
Standard library only, like every renderer here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tools.results.model import Report
from tools.results.render import markdown_table

ANCHOR = "weighted-score"
LIGHT_TTFT_RATIO = 1.1  # issue #26: light-load mean and p95 TTFT within 10% of the best


def _m(policy: dict[str, Any], metric: str) -> float:
    return float(policy[metric]["mean"])


def _att(policy: dict[str, Any]) -> str:
    return f"{100 * _m(policy, 'slo_attainment'):.1f}"


def _ttft(policy: dict[str, Any]) -> str:
    return f"{_m(policy, 'ttft_mean_ms'):,.0f} / {_m(policy, 'ttft_p95_ms'):,.0f}"


def _light_goal(cell: dict[str, Any], guarded: dict[str, Any], best: dict[str, Any]) -> str:
    if cell["regime"] != "light":
        return ""
    mean = _m(guarded, "ttft_mean_ms") / _m(best, "ttft_mean_ms")
    p95 = _m(guarded, "ttft_p95_ms") / _m(best, "ttft_p95_ms")
    word = "holds" if mean <= LIGHT_TTFT_RATIO and p95 <= LIGHT_TTFT_RATIO else "**misses**"
    return f"{word} ({mean:.2f}x / {p95:.2f}x)"


def trust_region(reports: Sequence[Report]) -> str:
    """One row per cell of the guarded reports, then the gaps summarised per regime."""
    bare_cells = {
        (c["fleet"], c["trace"], c["label"]): c["policies"]["zero-shot"]
        for r in reports
        if r.name == "bare"
        for c in r.data["cells"]
    }
    rows: list[list[str]] = []
    gaps: dict[str, list[tuple[float, float, float]]] = {}
    for report in reports:
        if not report.name.startswith("guarded"):
            continue
        for cell in report.data["cells"]:
            policies = cell["policies"]
            guarded, anchor = policies["zero-shot"], policies[ANCHOR]
            best = policies[cell["best_heuristic"]]
            bare = bare_cells[(cell["fleet"], cell["trace"], cell["label"])]
            att = {k: 100 * _m(p, "slo_attainment") for k, p in
                   (("g", guarded), ("b", bare), ("a", anchor), ("h", best))}  # fmt: skip
            gaps.setdefault(cell["regime"], []).append(
                (att["g"] - att["a"], att["g"] - att["h"], att["b"] - att["h"])
            )
            rows.append(
                [cell["fleet"], cell["trace"].split(".")[0], f"{cell['utilisation']:g}",
                 cell["regime"], _att(guarded), _att(bare), _att(anchor),
                 f"{_att(best)} ({cell['best_heuristic']})", _ttft(guarded), _ttft(bare),
                 _ttft(best), _light_goal(cell, guarded, best)]
            )  # fmt: skip
    header = ["fleet", "trace", "utilisation", "regime", "guarded att. %", "bare att. %",
              f"{ANCHOR} (anchor) att. %", "best heuristic att. %",
              "TTFT mean / p95 ms, guarded", "bare", "best heuristic",
              "light-load TTFT goal, guarded (mean / p95 vs best)"]  # fmt: skip
    summary = ["| regime | cells | guarded − anchor, pt (mean; worst) | guarded − best (mean; "
               "worst) | bare − best (mean; worst) |", "|---|---|---|---|---|"]  # fmt: skip
    for regime in ("light", "moderate", "heavy"):
        cells = gaps.get(regime, [])
        if not cells:
            continue
        cols = [
            f"{sum(c[i] for c in cells) / len(cells):+.2f}; {min(c[i] for c in cells):+.1f}"
            for i in range(3)
        ]
        summary.append(f"| {regime} | {len(cells)} | " + " | ".join(cols) + " |")
    config = next(r.data["config"] for r in reports if r.name.startswith("guarded"))
    note = (
        f"Seeds {','.join(map(str, config['seeds']))}, {config['limit']:,} requests per replay, "
        f"telemetry every {config['telemetry_interval_s']:g} s; best heuristic of "
        f"{', '.join(config['heuristics'])}."
    )
    return "\n\n".join([markdown_table(header, rows), "\n".join(summary), note])
