"""The router benchmark's table (`make bench-routers`, docs/router-benchmark.md): one line per
fleet, load and router, best SLO attainment first. Also what `bench_routers.py --table` prints.
Standard library only, like every renderer here."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tools.results.model import Report

FLEETS = ("single-site", "multi-site")
LOADS = ("moderate", "heavy")
# The report file; the harness writes its details and raw records beside it.
REPORT_NAME = "routers"


def in_order(names: tuple[str, ...]) -> Callable[[str], tuple[int, str]]:
    """Sort key: known names in their report order, others after them by name."""
    return lambda n: (names.index(n) if n in names else len(names), n)


def router_table(report: Mapping[str, Any]) -> str:
    lines = [
        "| fleet | load | router | SLO % | TTFT p50 / p95 / p99 (s) | E2E p50 / p95 (s) "
        "| added p50 / p99 (ms) | CPU / req (ms) | USD / 1k | residency violations |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    fleets = report["fleets"]
    for fleet in sorted(fleets, key=in_order(FLEETS)):
        for load in sorted(fleets[fleet], key=in_order(LOADS)):
            rows = fleets[fleet][load]
            ranked = sorted(rows.items(), key=lambda kv: -kv[1]["slo_attainment"])
            for name, r in ranked:
                t, e, a = r["ttft_ms"], r["e2e_ms"], r["added_ms"]
                lines.append(
                    f"| {fleet} | {load} | {name} | {100 * r['slo_attainment']:.1f} "
                    f"| {t['p50'] / 1000:.2f} / {t['p95'] / 1000:.2f} / {t['p99'] / 1000:.2f} "
                    f"| {e['p50'] / 1000:.2f} / {e['p95'] / 1000:.2f} "
                    f"| {a['p50']:.1f} / {a['p99']:.1f} | {r['cpu_us_per_request'] / 1000:.1f} "
                    f"| {r['cost_per_1k_requests']:.3f} | {r['residency_violations']} |"
                )
    return "\n".join(lines)


def routers(reports: Sequence[Report]) -> str:
    """The table of the directory's `routers.json` (its details files are not reports)."""
    return "\n\n".join(router_table(r.data) for r in reports if r.name == REPORT_NAME)
