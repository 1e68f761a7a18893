"""Plots of `routers.json`: one PNG per figure, a group of bars per fleet and load."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tools.results.routers import FLEETS, LOADS, in_order  # noqa: E402

FIGURES: dict[str, tuple[str, Callable[[Mapping[str, Any]], float]]] = {
    "slo_attainment": ("SLO attainment (%)", lambda r: 100 * r["slo_attainment"]),
    "ttft_p95": ("TTFT p95 (s)", lambda r: r["ttft_ms"]["p95"] / 1000),
    "cost_per_1k": ("USD per 1k requests", lambda r: r["cost_per_1k_requests"]),
    "added_p99": ("router added latency p99 (ms)", lambda r: r["added_ms"]["p99"]),
    "cpu_per_request": ("router CPU per request (ms)", lambda r: r["cpu_us_per_request"] / 1000),
}


def write_plots(report: Mapping[str, Any], out_dir: Path) -> list[Path]:
    fleets = report["fleets"]
    cells = [
        (f"{fleet}\n{load}", fleets[fleet][load])
        for fleet in sorted(fleets, key=in_order(FLEETS))
        for load in sorted(fleets[fleet], key=in_order(LOADS))
    ]
    routers = sorted({name for _, rows in cells for name in rows})
    written = []
    for key, (label, value) in FIGURES.items():
        fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(cells) + 2) + 2.2, 3.6))
        width = 0.8 / max(len(routers), 1)
        for j, name in enumerate(routers):
            xs = [i + (j - (len(routers) - 1) / 2) * width for i in range(len(cells))]
            ys = [value(rows[name]) if name in rows else 0.0 for _, rows in cells]
            ax.bar(xs, ys, width, label=name)
        ax.set_xticks(range(len(cells)), [c for c, _ in cells])
        ax.set_ylabel(label)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        path = out_dir / f"routers-{key}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
