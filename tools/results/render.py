"""Markdown renderers of report files: policy comparisons (`python -m optimizer evaluate`),
decision latency (`bench-decide --json`), calibration (`python -m optimizer calibrate`) and
several deciders (`tools/deciders_grid.py`)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean, pstdev
from typing import Any

from tools.results.model import Renderer, Report

# A report of a seeded sweep is named GROUP-sSEED; the seeds of one group are averaged.
SEEDED = re.compile(r"^(?P<group>.+)-s(?P<seed>\d+)$")
# Issue #18's definition of heavy load: the best heuristic below 85% of the oracle's
# attainment (the limit with no queueing and a perfect prefix cache).
HEAVY_SHARE_OF_ORACLE = 0.85


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _seeded_groups(reports: Sequence[Report]) -> dict[str, list[tuple[int, Any]]]:
    groups: dict[str, list[tuple[int, Any]]] = defaultdict(list)
    for report in reports:
        match = SEEDED.match(report.name)
        if match is None:
            raise ValueError(f"{report.name}.json: a sweep's reports are named GROUP-sSEED.json")
        groups[match["group"]].append((int(match["seed"]), report.data))
    return {group: sorted(runs, key=lambda run: run[0]) for group, runs in groups.items()}


def _figures(runs: Sequence[Any], policy: str) -> dict[str, list[float]]:
    try:
        stats = [run["policies"][policy] for run in runs]
    except KeyError:
        raise ValueError(f"policy {policy!r} is missing from a report of the group") from None
    return {
        "attainment": [100 * s["slo_attainment"] for s in stats],
        "ttft_mean": [s["ttft_ms"]["mean"] for s in stats],
        "ttft_p95": [s["ttft_ms"]["p95"] for s in stats],
        "cost": [s["cost_per_1k_requests"] for s in stats],
    }


def _spread(values: Sequence[float]) -> str:
    return f"{fmean(values):.2f} ± {pstdev(values):.2f}"


def _versus(a: Sequence[float], b: Sequence[float], digits: int) -> str:
    return f"{fmean(a):,.{digits}f} vs {fmean(b):,.{digits}f}"


def comparison(learned: str, label: str | None = None) -> Renderer:
    """One row per group of `evaluate` reports: the policy the reports name `learned` (shown as
    `label`, by default the same) against the best other policy of the same reports (the
    highest mean SLO attainment over the group's seeds)."""
    shown = label or learned

    def render(reports: Sequence[Report]) -> str:
        rows = []
        seeds: set[int] = set()
        for group, seeded in sorted(_seeded_groups(reports).items()):
            seeds.update(seed for seed, _ in seeded)
            runs = [run for _, run in seeded]
            others = [name for name in runs[0]["policies"] if name != learned]
            if not others:
                raise ValueError(f"{group}: no policy to compare {learned!r} with")
            best = max(others, key=lambda name: fmean(_figures(runs, name)["attainment"]))
            mine, theirs = _figures(runs, learned), _figures(runs, best)
            oracle = fmean(100 * run["oracle"]["slo_attainment"] for run in runs)
            heavy = fmean(theirs["attainment"]) < HEAVY_SHARE_OF_ORACLE * oracle
            rows.append(
                [
                    group,
                    f"{runs[0]['load']:.3g}x (U {runs[0]['utilisation']:.2f})",
                    "heavy" if heavy else "moderate",
                    f"{oracle:.2f}",
                    _spread(mine["attainment"]),
                    f"{best} {_spread(theirs['attainment'])}",
                    f"{fmean(mine['attainment']) - fmean(theirs['attainment']):+.2f}",
                    _versus(mine["ttft_mean"], theirs["ttft_mean"], 0),
                    _versus(mine["ttft_p95"], theirs["ttft_p95"], 0),
                    _versus(mine["cost"], theirs["cost"], 3),
                ]
            )
        header = [
            "reports",
            "load (utilisation)",
            "class",
            "oracle SLO (%)",
            f"{shown} SLO (%)",
            "best other policy SLO (%)",
            "gap (pt)",
            "TTFT mean (ms)",
            "TTFT p95 (ms)",
            "USD / 1k requests",
        ]
        legend = (
            f"Mean over seeds {', '.join(map(str, sorted(seeds)))} (± standard deviation). "
            f"“a vs b” cells are {shown} against the best other policy of the row. A row is "
            "heavy when that policy's attainment is below 85% of the oracle's (the limit with "
            "no queueing and a perfect prefix cache), moderate otherwise."
        )
        return markdown_table(header, rows) + "\n\n" + legend

    return render


def decision_latency(reports: Sequence[Report]) -> str:
    """`bench-decide --json`: µs p50 / p99 per policy, decision path and candidate count."""
    parts = []
    for report in reports:
        paths = list(report.data)
        sizes = sorted({int(n) for path in paths for p in report.data[path].values() for n in p})
        rows = []
        for policy in report.data[paths[0]]:
            for path in paths:
                figures = report.data[path].get(policy, {})
                cells = [
                    f"{figures[str(n)]['p50_us']:,.1f} / {figures[str(n)]['p99_us']:,.1f}"
                    if str(n) in figures
                    else ""
                    for n in sizes
                ]
                rows.append([policy, path, *cells])
        header = ["policy", "decision path", *(f"{n} candidates" for n in sizes)]
        title = f"`{report.name}.json`, µs per decision, p50 / p99:\n\n" if len(reports) > 1 else ""
        parts.append(title + markdown_table(header, rows))
    return "\n\n".join(parts) + "\n\nCells are µs per decision, p50 / p99."


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _change(value: dict[str, Any]) -> str:
    nominal, fitted = value["nominal"], value["fitted"]
    ratio = f" ({fitted / nominal:.3f}x)" if nominal else ""
    return f"{_number(nominal)} → {_number(fitted)}{ratio}"


def calibration(reports: Sequence[Report]) -> str:
    """`calibrate --report`: each profile's nominal and fitted values, and the twin's error."""
    parts = []
    for report in reports:
        rows = []
        for profile in report.data["profiles"]:
            values = profile["values"]
            rows.append(
                [
                    f"{profile['model']} @ {profile['accelerator']}",
                    profile["status"],
                    f"{profile['samples']:,}",
                    *(_change(values[key]) for key in PROFILE_VALUES),
                ]
            )
        header = ["profile", "status", "samples", *PROFILE_VALUES]
        fidelity = report.data["fidelity"]
        errors = [
            [
                when,
                *(
                    f"{100 * fidelity[when][kind][stat]:.1f}%"
                    for kind in ("ttft", "e2e")
                    for stat in ("median_abs_rel_error", "p95_abs_rel_error")
                ),
            ]
            for when in ("before", "after")
        ]
        error_header = ["replay", "TTFT median error", "TTFT p95", "E2E median error", "E2E p95"]
        parts.append(
            markdown_table(header, rows)
            + f"\n\nThe twin's per-request error over {report.data['measured']:,} measured "
            "requests, replayed on the nominal fleet (before) and the calibrated one (after):"
            + "\n\n"
            + markdown_table(error_header, errors)
        )
    return "\n\n".join(parts)


PROFILE_VALUES = ("prefill_tokens_per_s", "decode_step_ms", "decode_step_ms_per_seq")


def _mean_of(group: Sequence[dict[str, Any]], field: str) -> float:
    return fmean(r[field] for r in group)


def _cell(group: Sequence[dict[str, Any]], field: str, fmt: str) -> str:
    return format(_mean_of(group, field), fmt) if group else "–"


def _points(group: Sequence[dict[str, Any]], base: Sequence[dict[str, Any]] | None) -> str:
    """SLO attainment's change from one decider's, in points."""
    if not group or not base:
        return "–"
    change = _mean_of(group, "slo_attainment") - _mean_of(base, "slo_attainment")
    return f"{100 * change:+.1f} pt"


def deciders_table(rows: Sequence[dict[str, Any]]) -> str:
    """`tools/deciders_grid.py`'s replays as one row per fleet, utilisation, policy and K: the
    means over the seeds, with K independent deciders ("own") and with a shared view."""
    cells: dict[tuple[str, float, str, int, bool], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        key = (row["fleet"], row["utilisation"], row["policy"], row["deciders"])
        cells[(*key, row["shared_view"])].append(row)
    out = []
    for fleet, util, policy, k in sorted({key[:4] for key in cells}):
        own = cells[(fleet, util, policy, k, False)]
        # One decider's view is shared already: its row is both.
        shared = cells.get((fleet, util, policy, k, True)) or (own if k == 1 else [])
        base = cells.get((fleet, util, policy, 1, False))
        out.append(
            [fleet, f"{util:g}", policy, str(k), str(len(own)),
             _cell(own, "slo_attainment", ".1%"), _points(own, base),
             _cell(shared, "slo_attainment", ".1%"), _points(shared, base),
             _cell(own, "ttft_mean_ms", ",.0f"), _cell(shared, "ttft_mean_ms", ",.0f"),
             _cell(own, "prefix_hit_rate", ".3f"), _cell(shared, "prefix_hit_rate", ".3f")]
        )  # fmt: skip
    header = ["fleet", "util.", "policy", "K", "seeds", "SLO att. own", "Δ own",
              "SLO att. shared", "Δ shared", "TTFT mean own (ms)", "TTFT mean shared (ms)",
              "hit rate own", "hit rate shared"]  # fmt: skip
    return markdown_table(header, out)


def deciders(reports: Sequence[Report]) -> str:
    """The reports of `tools/deciders_grid.py` (each maps a replay's key to its figures)."""
    return deciders_table([row for report in reports for row in report.data.values()])
