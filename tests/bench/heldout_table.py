"""The generalist's held-out table from `python -m optimizer evaluate` reports.

    .venv/bin/python tests/bench/heldout_table.py [--learned NAME] REPORT.json [...]

Each report is one fleet, utilisation and seed, named FLEET-uU-sSEED[-PART].json
(docs/learned-policy.md gives the commands); parts of one run are merged. `--learned` names
the learned policy as the reports do (default `generalist`; a candidate's output directory
before it is shipped).
Groups them by topology and utilisation, and prints per group the generalist and the best
heuristic (highest mean attainment over the seeds) as mean ± std of SLO attainment, mean and
p95 TTFT and USD per 1k requests, the oracle's attainment, whether the load is heavy (the best
heuristic below 85% of the oracle's attainment, issue #18) and the generalist's margin in
points. Prints figures, asserts nothing.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

LEARNED = "generalist"


def _learned(paths: list[str]) -> tuple[str, list[str]]:
    if paths[:1] == ["--learned"]:
        return paths[1], paths[2:]
    return LEARNED, paths


def _figures(reports: list[dict[str, Any]], policy: str) -> dict[str, list[float]]:
    runs = [r["policies"][policy] for r in reports]
    return {
        "att": [100 * p["slo_attainment"] for p in runs],
        "mean": [p["ttft_ms"]["mean"] for p in runs],
        "p95": [p["ttft_ms"]["p95"] for p in runs],
        "cost": [p["cost_per_1k_requests"] for p in runs],
    }


def _cell(values: list[float], digits: int) -> str:
    return f"{fmean(values):,.{digits}f} ± {pstdev(values):,.{digits}f}"


def main(argv: list[str]) -> int:
    learned, paths = _learned(argv)
    # Reports of the same fleet, utilisation and seed (e.g. the heuristics and the generalist
    # evaluated by two commands on the same arrivals) are merged.
    by_run: dict[tuple[str, float, int], dict[str, Any]] = {}
    for path in paths:
        report = json.loads(Path(path).read_text())
        key = (Path(path).name.split("-u")[0], round(report["utilisation"], 3), report["seed"])
        if key in by_run:
            by_run[key]["policies"].update(report["policies"])
        else:
            by_run[key] = report
    groups: dict[tuple[str, float], list[dict[str, Any]]] = defaultdict(list)
    for (fleet, utilisation, _), report in by_run.items():
        groups[(fleet, utilisation)].append(report)
    print(
        "| fleet | utilisation (load) | seeds | class | policy | SLO attainment (%) "
        "| TTFT mean (ms) | TTFT p95 (ms) | USD / 1k |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (fleet, utilisation), reports in sorted(groups.items()):
        heuristics = [p for p in reports[0]["policies"] if p != learned]
        best = max(heuristics, key=lambda p: fmean(_figures(reports, p)["att"]))
        oracle = fmean(100 * r["oracle"]["slo_attainment"] for r in reports)
        best_att = fmean(_figures(reports, best)["att"])
        heavy = best_att < 0.85 * oracle
        loads = fmean(r["load"] for r in reports)
        seeds = ",".join(str(r["seed"]) for r in sorted(reports, key=lambda r: r["seed"]))
        for label in (learned, best):
            f = _figures(reports, label)
            name = label if label == learned else f"best: {label}"
            print(
                f"| {fleet} | {utilisation:g} ({loads:.3g}x) | {seeds} | "
                f"{'heavy' if heavy else 'moderate'} | {name} | {_cell(f['att'], 2)} | "
                f"{_cell(f['mean'], 0)} | {_cell(f['p95'], 0)} | {_cell(f['cost'], 3)} |"
            )
        margin = fmean(_figures(reports, learned)["att"]) - best_att
        note = f"oracle {oracle:.2f}%; generalist − best: {margin:+.2f} pt"
        print(f"| {fleet} | {utilisation:g} | | | {note} | | | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
