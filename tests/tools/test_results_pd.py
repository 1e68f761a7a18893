"""The interference table (tools.results.pd.pd_interference, issue #30) reads
`tools/pd_grid.py` reports right: vLLM chunked prefill over `off`, per load and heuristic."""

from __future__ import annotations

from typing import Any

import pytest

from tools.results.model import Report
from tools.results.pd import pd_interference


def _row(util: float, seed: int, arm: str, setting: str, p95: float) -> dict[str, Any]:
    return {
        "utilisation": util, "seed": seed, "arm": arm, "chunked_prefill": setting,
        "slo_attainment": 0.9, "ttft_mean_ms": p95 / 4, "ttft_p95_ms": p95, "e2e_p95_ms": 9000.0,
    }  # fmt: skip


def _report(name: str, rows: list[dict[str, Any]]) -> Report:
    return Report(name, {f"{r['utilisation']:g}|{r['seed']}|{r['arm']}": r for r in rows})


def test_interference_is_the_chunked_mean_over_the_unchunked_mean_less_one() -> None:
    vllm = [_row(1.2, s, "mixed:latency-first", "vllm", p) for s, p in ((0, 1100.0), (1, 1300.0))]
    off = [_row(1.2, s, "mixed:latency-first", "off", 1000.0) for s in (0, 1)]
    split = [_row(1.2, 0, "split", "vllm", 50_000.0)]  # not an all-mixed arm: left out
    table = pd_interference([_report("off", off), _report("vllm", vllm + split)])
    (line,) = [x for x in table.splitlines() if x.startswith("| 1.2 ")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:3] == ["1.2", "latency-first", "2/2"]
    assert cells[6:8] == ["1,200 / 1,000", "+20.0%"]
    assert cells[5] == "+20.0%"
    assert "split" not in table


def test_a_heuristic_replayed_one_way_only_is_refused() -> None:
    only = [_row(0.7, 0, "mixed:weighted-score", "vllm", 1000.0)]
    with pytest.raises(ValueError, match="vllm and off"):
        pd_interference([_report("vllm", only)])
