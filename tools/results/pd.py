"""The prefill/decode split table (`tools/pd_grid.py`, issue #30): per load, the split stage,
its bandwidth-blind variant, one-node placement on the same P/D fleet, and the best one-node
heuristic on the same hardware run all mixed; means over the seeds. Standard library only,
like every renderer here."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from tools.results.model import Report
from tools.results.render import markdown_table

_LABELS = {
    "split": "split (pd-threshold)",
    "split-blind": "split, bandwidth-blind (pd-threshold-blind)",
    "one-node": "one node, roles honoured (weighted-score)",
}


def _mean(rows: Sequence[dict[str, Any]], field: str) -> float:
    return fmean(r[field] for r in rows)


def pd_table(rows: Sequence[dict[str, Any]]) -> str:
    """One row per load and arm; "mixed-only best" is the all-mixed heuristic with the
    highest mean attainment at that load, and p95 TTFT is compared with it."""
    cells: dict[tuple[float, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        cells[(row["utilisation"], row["arm"])].append(row)
    out = []
    for util in sorted({u for u, _ in cells}):
        mixed = {a: g for (u, a), g in cells.items() if u == util and a.startswith("mixed:")}
        best = max(mixed, key=lambda a: _mean(mixed[a], "slo_attainment")) if mixed else None
        base = _mean(mixed[best], "ttft_p95_ms") if best is not None else None
        arms = [a for a in ("split", "split-blind", "one-node") if (util, a) in cells]
        for arm in [*arms, *([best] if best is not None else [])]:
            group = cells[(util, arm)]
            label = _LABELS.get(arm, f"mixed-only best ({arm.removeprefix('mixed:')})")
            p95 = _mean(group, "ttft_p95_ms")
            change = f"{(p95 / base - 1):+.0%}" if base else "–"
            out.append(
                [f"{util:g}", label, str(len(group)), f"{_mean(group, 'slo_attainment'):.1%}",
                 f"{_mean(group, 'ttft_mean_ms'):,.0f}", f"{p95:,.0f}", change,
                 f"{_mean(group, 'e2e_p95_ms'):,.0f}", f"{_mean(group, 'split_share'):.0%}"]
            )  # fmt: skip
    header = ["util.", "placement", "seeds", "SLO att.", "TTFT mean (ms)", "TTFT p95 (ms)",
              "p95 vs mixed-only best", "E2E p95 (ms)", "split"]  # fmt: skip
    return markdown_table(header, out)


def pd_split(reports: Sequence[Report]) -> str:
    """The reports of `tools/pd_grid.py` (each maps a replay's key to its figures)."""
    return pd_table([row for report in reports for row in report.data.values()])


def pd_interference(reports: Sequence[Report]) -> str:
    """What prefill-decode interference costs one-node placement on TTFT (issue #30): each
    all-mixed heuristic of `tools/pd_grid.py` replayed with chunked prefill at vLLM's budgets
    (a prefill pays for the decodes beside it) and without (`off`: a prefill runs alone, at
    its full rate, and stalls decode), means over the seeds. A split removes only this cost
    from a prefill, so the change bounds what splitting can win on TTFT at that load."""
    cells: dict[tuple[float, str, str], list[dict[str, Any]]] = defaultdict(list)
    for report in reports:
        for row in report.data.values():
            if row["arm"].startswith("mixed:"):
                cells[(row["utilisation"], row["arm"], row["chunked_prefill"])].append(row)
    out = []
    for util, arm in sorted({(u, a) for u, a, _ in cells}):
        on, off = cells.get((util, arm, "vllm")), cells.get((util, arm, "off"))
        if not on or not off:
            raise ValueError(f"{util:g} {arm}: needs replays with chunked prefill vllm and off")
        pair = (on, off)
        p95 = [_mean(g, "ttft_p95_ms") for g in pair]
        mean = [_mean(g, "ttft_mean_ms") for g in pair]
        out.append(
            [f"{util:g}", arm.removeprefix("mixed:"), f"{len(on)}/{len(off)}",
             " / ".join(f"{_mean(g, 'slo_attainment'):.1%}" for g in pair),
             " / ".join(f"{m:,.0f}" for m in mean), f"{mean[0] / mean[1] - 1:+.1%}",
             " / ".join(f"{p:,.0f}" for p in p95), f"{p95[0] / p95[1] - 1:+.1%}",
             " / ".join(f"{_mean(g, 'e2e_p95_ms'):,.0f}" for g in pair)]
        )  # fmt: skip
    header = ["util.", "all-mixed heuristic", "seeds", "SLO att. (vLLM / off)",
              "TTFT mean (ms, vLLM / off)", "mean: interference", "TTFT p95 (ms, vLLM / off)",
              "p95: interference", "E2E p95 (ms, vLLM / off)"]  # fmt: skip
    return markdown_table(header, out)
