"""The twin on the held-out suite's fleets (`tools/twin_suite.py`, issue #26): per fleet,
traffic and load, what the calibration moved against perturbed truths, its held-out TTFT
errors before and after, its verdicts and the three goals; then, for every goal that fails,
the values and statuses that make it fail. Standard library only, like every renderer here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tools.results.model import Report
from tools.results.render import markdown_table

MED, P95 = "median_abs_rel_error", "p95_abs_rel_error"
LEGEND = (
    "Counts are summed over the truths (seeded draws), errors are means over them, the last "
    "four columns count truths. "
    "*Fitted*: values the proposal moved, of all the fleet's profile values; *pinned*: values "
    "the data pins down (status fitted or agrees_with_nominal), *recovered* when the proposal "
    "is within 10% of the truth, *missed* otherwise; *moved w/o data*: a value not pinned down "
    "(insufficient_data, not_identifiable) that moved more than 10%; *unseen*: a value not pinned "
    "down, kept, whose truth is more than 10% from nominal. The held-out TTFT errors "
    "are the proposal's, whatever its verdict: a proposal whose verdict is no improvement is "
    "not applied without an override, so what is applied is then the nominal fleet.\n\n"
)


def goals(cell: dict[str, Any]) -> dict[str, bool]:
    """The issue's three goals for one cell: every value the data pins down recovered within
    10%; no other value moved more than 10%; the proposal's held-out TTFT median and p95
    errors no worse than the nominal fleet's."""
    classes = [v["class"] for v in cell["values"]]
    before, after = cell["before"]["ttft"], cell["after"]["ttft"]
    return {
        "recovered": "missed" not in classes,
        "no_move": "moved" not in classes,
        "not_worse": after[MED] <= before[MED] and after[P95] <= before[P95],
    }


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _mark(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _unseen(cell: dict[str, Any]) -> int:
    """Values kept at nominal, not pinned down, whose truth is more than 10% away: what the
    traffic leaves the twin unable to see."""
    return sum(
        v["class"] == "kept" and abs(v["truth"] / v["nominal"] - 1.0) > 0.1
        for v in cell["values"]
        if v["nominal"]
    )


def _order(cell: dict[str, Any]) -> tuple[str, str, float]:
    return (cell["fleet"], cell["traffic"], cell["utilisation"])


def _why(cell: dict[str, Any], met: dict[str, bool]) -> list[str]:
    where = (
        f"{cell['fleet']}, truth {cell['truth_seed']}, {cell['traffic']} ({cell['policy']}), "
        f"{cell['utilisation']:g}"
    )
    out = []
    for v in cell["values"]:
        if v["class"] not in ("missed", "moved"):
            continue
        what = "missed" if v["class"] == "missed" else "moved without data"
        rows = v["ttft_rows"]
        out.append(
            f"- {where}: {v['profile']} {v['value']} {what} ({v['status']}, "
            f"{v['samples']:,} requests, {rows['queue_free']:,} queue-free TTFT rows of "
            f"{rows['queue_free'] + rows['queued']:,}): nominal {v['nominal']:g}, truth "
            f"{v['truth']:g}, proposed {v['proposed']:g} ({v['proposed'] / v['truth']:.2f}x the "
            f"truth); verdict {cell['verdict']['verdict']}"
        )
    if not met["not_worse"]:
        b, a = cell["before"]["ttft"], cell["after"]["ttft"]
        out.append(
            f"- {where}: held-out TTFT error median {_pct(b[MED])} -> {_pct(a[MED])}, p95 "
            f"{_pct(b[P95])} -> {_pct(a[P95])}; verdict {cell['verdict']['verdict']}"
            f" ({cell['verdict']['reason']})"
        )
    return out


def _count(ok: int, n: int) -> str:
    return f"{ok}/{n}" if ok == n else f"**{ok}/{n}**"


def _row(group: list[dict[str, Any]]) -> list[str]:
    """A fleet, traffic and utilisation over its truths: counts summed, errors averaged."""
    first, n = group[0], len(group)
    values = [v for cell in group for v in cell["values"]]
    classes = [v["class"] for v in values]
    pinned = classes.count("recovered") + classes.count("missed")
    met = [goals(cell) for cell in group]

    def mean(side: str, stat: str) -> str:
        return _pct(sum(cell[side]["ttft"][stat] for cell in group) / n)

    return [first["fleet"], first["trace"].split(".")[0],
            f"{first['traffic']} ({first['policy']})", f"{first['utilisation']:g}", str(n),
            f"{sum(v['status'] == 'fitted' for v in values)}/{len(values)}",
            f"{classes.count('recovered')}/{pinned}", str(classes.count("missed")),
            str(classes.count("moved")), str(sum(_unseen(cell) for cell in group)),
            f"{mean('before', MED)} → {mean('after', MED)}",
            f"{mean('before', P95)} → {mean('after', P95)}",
            f"{sum(c['verdict']['verdict'] == 'improved' for c in group)}/{n}",
            *(_count(sum(m[goal] for m in met), n)
              for goal in ("recovered", "no_move", "not_worse"))]  # fmt: skip


def twin_table(cells: Sequence[dict[str, Any]]) -> str:
    """One row per fleet, traffic and utilisation, over the truths; below it, what makes
    each failed goal fail, run by run."""
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for cell in sorted(cells, key=lambda c: (*_order(c), c["truth_seed"])):
        groups.setdefault(_order(cell), []).append(cell)
    rows = [_row(group) for group in groups.values()]
    why = [line for group in groups.values() for c in group for line in _why(c, goals(c))]
    header = ["fleet", "trace", "traffic", "util.", "truths", "fitted",
              "pinned, recovered ≤10%", "missed", "moved w/o data", "unseen",
              "held-out TTFT median err.", "TTFT p95 err.", "improved", "all recovered",
              "nothing moved w/o data", "TTFT err. not worse"]  # fmt: skip
    table = LEGEND + markdown_table(header, rows)
    met_all = [goals(c) for c in cells]
    summary = (
        f"\n\nGoals met in {sum(all(m.values()) for m in met_all)} of {len(cells)} runs "
        f"(all recovered: {sum(m['recovered'] for m in met_all)}, nothing moved without data: "
        f"{sum(m['no_move'] for m in met_all)}, TTFT errors not worse: "
        f"{sum(m['not_worse'] for m in met_all)})."
    )
    if why:
        summary += "\n\nWhere a goal fails:\n\n" + "\n".join(why)
    return table + summary


def twin_suite(reports: Sequence[Report]) -> str:
    """The reports of `tools/twin_suite.py` (each maps a run's key to its figures)."""
    return twin_table([cell for report in reports for cell in report.data.values()])
