"""Markdown renderers of the serving benchmarks' reports: the decision API over HTTP
(`tests/bench/bench_decisions.py --json`), the shared live view's staleness
(`tests/bench/bench_sharedview.py --json`) and the endpoint picker's throughput by process
count (`tests/bench/bench_picker.py --json`) and a large body through the router and the picker
(`tests/bench/bench_large_body.py --json`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tools.results.model import Report
from tools.results.render import markdown_table


def decision_api(reports: Sequence[Report]) -> str:
    """One row per fleet: what the HTTP endpoints decide per second beside the raw ASGI limit,
    the server's CPU time per decision, the single endpoint's latency at half its maximum, and
    the batch endpoint against the single one and against an engine costing nothing."""
    rows = []
    for report in reports:
        data, runs = report.data, report.data["runs"]
        raw, decide, half, batch = runs["raw"], runs["decide"], runs["half"], runs["batch"]
        size = data["batch_size"]
        batch_rate = batch["rps"] * size
        free = runs.get("free_batch")
        ceiling = f"{free['rps'] * size / decide['rps']:.1f}x" if free else "–"
        alone = runs.get("free_single")
        single_free = f"{alone['rps']:,.0f} ({alone['cpu_us']:,.0f} µs)" if alone else "–"
        rows.append(
            [
                f"{data['fleet']} ({data['nodes']:,} nodes)",
                f"{raw['rps']:,.0f}",
                f"{decide['rps']:,.0f}",
                f"{decide['rps'] / raw['rps']:.0%} ({raw['cpu_us'] / decide['cpu_us']:.0%})",
                f"{decide['cpu_us']:,.0f}",
                single_free,
                f"{half['p50_ms']:.2f} / {half['p99_ms']:.2f}",
                f"{batch_rate:,.0f}",
                f"{batch_rate / decide['rps']:.1f}x",
                f"{batch['cpu_us'] / size:,.0f}",
                ceiling,
            ]
        )
    header = ["fleet", "raw ASGI req/s", "/placements decisions/s", "share of raw (by CPU)",
              "server CPU µs / decision",
              "engine costing nothing: decisions/s (server CPU µs / decision)",
              "p50 / p99 ms at half max", "batch decisions/s",
              "batch / single", "batch server CPU µs / decision",
              "batch ceiling (engine costing nothing)"]  # fmt: skip
    first = reports[0].data
    legend = (
        f"{first['workers']} uvicorn worker(s), {first['database']}, {first['seconds']} s per "
        f"run, batches of {first['batch_size']}. Requests/s move with whatever else shares the "
        "cores; the server's CPU time per request much less."
    )
    return markdown_table(header, rows) + "\n\n" + legend


def shared_view(reports: Sequence[Report]) -> str:
    """One row per run: publish-to-visible delay of the shared view's sends, by reader count."""
    rows = []
    for report in sorted(reports, key=lambda r: r.data["readers"]):
        data, lag = report.data, report.data["lag_ms"]
        rows.append(
            [
                str(data["readers"]),
                f"{data['rate_per_s']:g}",
                f"{data['batch_ms']:g}",
                f"{data['sent']:,}",
                *(f"{lag[q]:.1f}" for q in ("p50", "p90", "p99", "max")),
            ]
        )
    header = ["readers", "sends/s", "batch ms", "sends", "p50 ms", "p90 ms", "p99 ms", "max ms"]
    return markdown_table(header, rows)


def picker_scale_out(reports: Sequence[Report]) -> str:
    """One row per run: the endpoint picker's decisions/s at most, its latency at half that,
    and the server's CPU time per decision, by process count and shared view on or off."""
    rows = []
    ordered = sorted(reports, key=lambda r: (r.data["processes"], r.data["shared_view"]))
    for report in ordered:
        data = report.data
        peak, half = data["runs"]["picker"]["max"], data["runs"]["picker"]["half_max"]
        rows.append(
            [
                str(data["processes"]),
                "on" if data["shared_view"] else "off",
                f"{peak['rps']:,.0f}",
                f"{half['p50_ms']:.2f} / {half['p99_ms']:.2f}",
                f"{peak['server_cpu_us']:,.0f}",
                data["load_average"]["before"].split()[0],
            ]
        )
    header = ["processes", "shared view", "decisions/s at most", "p50 / p99 ms at half max",
              "server CPU µs / decision", "load average before"]  # fmt: skip
    return markdown_table(header, rows)


def learned_why(reports: Sequence[Report]) -> str:
    """One row per model: the learned decision through the pipeline against its attribution
    (integrated gradients) on the same candidates, medians in µs."""
    rows = [
        [
            row["model"],
            str(row["candidates"]),
            f"{row['decide_us']:,.0f}",
            f"{row['explain_us']:,.0f}",
            f"{row['explain_us'] / row['decide_us']:.1f}x",
        ]
        for report in reports
        for row in report.data["rows"]
    ]
    header = ["model", "candidates", "decision µs", "attribution µs", "attribution / decision"]
    return markdown_table(header, rows) + "\n\nMedians of wall time over the repeats."


def router_overhead(reports: Sequence[Report]) -> str:
    """One row per background load: what the router adds to a probe's TTFT (p50 / p99 of the
    pairs' differences), both TTFTs, the router's CPU per call and its own decision time."""

    def spread(figures: dict[str, float]) -> str:
        return f"{figures['p50']:.1f} / {figures['p99']:.1f}"

    rows = []
    for report in sorted(reports, key=lambda r: r.data["offered_rate_per_s"]):
        data = report.data
        offered = data["offered_rate_per_s"]
        load = f"{offered:g}/s → {data['background_calls_per_s']:.1f}/s" if offered else "none"
        rows.append(
            [
                load,
                str(data["probe_pairs"]),
                spread(data["added_ms"]),
                spread(data["router_ttft_ms"]),
                spread(data["direct_ttft_ms"]),
                f"{data['router_cpu_us_per_call'] / 1000:.1f}",
                f"{data['decision_path_us_mean'] / 1000:.2f}",
            ]
        )
    header = ["background load (offered → achieved)", "probe pairs", "added TTFT p50 / p99 ms",
              "through the router p50 / p99 ms", "direct p50 / p99 ms",
              "router CPU ms per call", "parse + decide ms (mean)"]  # fmt: skip
    legend = (
        "Router CPU per call is the router process's user + system time over the calls it "
        "served, background threads included; parse + decide is "
        "`locus_router_overhead_seconds`, wall time."
    )
    return markdown_table(header, rows) + "\n\n" + legend


def receipts(reports: Sequence[Report]) -> str:
    """One row per round: median engine time per decision with the receipt's candidates
    estimated and with none, alternating in the same process."""
    rows = []
    for report in reports:
        data = report.data
        for number, figures in enumerate(data["rounds"], start=1):
            none, top = figures["none_us"], figures["top_us"]
            rows.append(
                [
                    str(number),
                    f"{none:.1f}",
                    f"{top:.1f}",
                    f"{top - none:+.1f}",
                    f"{top / none:.2f}x",
                ]
            )
    top_n = reports[0].data["candidates"]
    header = [
        "round",
        "no candidate estimated µs",
        f"top {top_n} estimated µs",
        "added µs",
        "ratio",
    ]
    return (
        markdown_table(header, rows) + "\n\nMedians of wall time per decision (engine + receipt)."
    )


def large_body(reports: Sequence[Report]) -> str:
    """Per prompt size: the router against straight to the node (closed loops by concurrency,
    probe pairs, the router's CPU and its own time), then the picker by concurrent streams,
    then the body-size limits as each door answered them."""

    def pair(figures: dict[str, float]) -> str:
        return f"{figures['p50']:.1f} / {figures['p99']:.1f}"

    def size(row: dict[str, Any]) -> str:
        return f"{row['tokens']:,} ({row['body_bytes'] / 1000:,.0f} KB)"

    loops, probes, picker, limits = [], [], [], []
    for report in reports:
        data = report.data
        for row in data.get("router", []):
            for level in row["levels"]:
                through, direct = level["router"], level["direct"]
                loops.append([size(row), str(level["concurrency"]), f"{through['rps']:.1f}",
                              pair(through["ttft_ms"]), f"{direct['rps']:.1f}",
                              pair(direct["ttft_ms"])])  # fmt: skip
            probes.append([size(row), str(row["pairs"]), pair(row["added_ttft_ms"]),
                           pair(row["router_ttft_ms"]), pair(row["direct_ttft_ms"]),
                           f"{row['router_cpu_ms_per_call']:.2f}",
                           f"{row['decision_path_ms_mean']:.2f}"])  # fmt: skip
        for row in data.get("picker", []):
            for level in row["levels"]:
                picker.append([f"{size(row)}, {row['chunks']} chunks", str(level["streams"]),
                               f"{level['rps']:.1f}",
                               f"{level['p50_ms']:.1f} / {level['p99_ms']:.1f}",
                               f"{level['server_cpu_us'] / 1000:.2f}",
                               f"{level['picker_ms_mean']:.2f}"])  # fmt: skip
        for door in ("router", "picker"):
            found = data.get(f"{door}_limits")
            if found:
                cases = ", ".join(
                    f"{_LIMIT_CASES[name]}: {_answered(case)}"
                    for name, case in found.items()
                    if name in _LIMIT_CASES
                )
                limits.append(f"{door} (limit {found['limit_bytes']:,} bytes): {cases}")
    parts = []
    if loops:
        header = ["prompt tokens (body)", "concurrency", "through the router req/s",
                  "TTFT p50 / p99 ms", "straight to the nodes req/s",
                  "TTFT p50 / p99 ms"]  # fmt: skip
        parts.append(markdown_table(header, loops))
        header = ["prompt tokens (body)", "probe pairs", "added TTFT p50 / p99 ms",
                  "through the router p50 / p99 ms", "direct p50 / p99 ms",
                  "router CPU ms per call", "parse + decide ms (mean)"]  # fmt: skip
        parts.append(markdown_table(header, probes))
    if picker:
        header = ["prompt tokens (body), chunks", "concurrent streams", "req/s",
                  "per request p50 / p99 ms", "server CPU ms / request",
                  "picker's own ms (mean)"]  # fmt: skip
        parts.append(markdown_table(header, picker))
    if limits:
        parts.append("Body-size limits, HTTP status answered: " + "; ".join(limits) + ".")
    return "\n\n".join(parts)


_LIMIT_CASES = {
    "over": "one byte over",
    "at": "exactly the limit",
    "one_5mib_message": "5 MiB in one message",
}


def _answered(case: dict[str, Any]) -> str:
    """A door's answer: the status, and who gave it when a node did (past the door)."""
    if case.get("status") is None:
        return f"gRPC {case.get('grpc')}"
    node = case.get("node")
    return f"{case['status']} from node {node}" if node else str(case["status"])


def live_deciders(reports: Sequence[Report]) -> str:
    """One row per run of each report: the canary's SLO attainment and its change from the
    report's first run (one process), the decision time from the records and its p99's ratio
    to the first run's, of it the thread CPU time (reports from before it was measured show
    a dash), the router's own histogram and the shared view's lag."""
    rows = []
    for report in reports:
        data = report.data
        base = data["runs"][0]
        for run in data["runs"]:
            d, lag = run["decision_us"], run["shared_view_lag_ms"]
            router = run["router_overhead_ms"]
            cpu = run.get("decision_cpu_us")
            rows.append(
                [
                    f"{data['minutes']:g} min, {data['requests_per_s']:.1f} req/s",
                    f"{run['processes']}" + ("" if run["shared_view"] else " (own views)"),
                    f"{run['outcomes']:,}",
                    f"{run['slo_attainment']:.2%}",
                    f"{(run['slo_attainment'] - base['slo_attainment']) * 100:+.2f} pt",
                    f"{d['p50']:,.0f} / {d['p99']:,.0f}",
                    f"{d['p99'] / base['decision_us']['p99']:.2f}",
                    f"{cpu['p50']:,.0f} / {cpu['p99']:,.0f}" if cpu else "–",
                    f"{router['p50']:.2f} / {router['p99']:.2f}",
                    f"{lag['p50']:.1f} / {lag['p99']:.1f}" if lag["count"] else "–",
                    f"{run['router_cpu_s']:.0f} / {run['scraper_cpu_s']:.0f}",
                    f"{run['load_average_before'][0]:.1f}",
                ]
            )
    header = ["replay", "processes", "outcomes", "SLO attainment", "Δ from 1 process",
              "decision p50 / p99 µs", "p99 ratio", "of it CPU p50 / p99 µs",
              "router parse + decide p50 / p99 ms",
              "shared view lag p50 / p99 ms", "CPU s routers / scraper",
              "load average before"]  # fmt: skip
    legend = (
        "SLO attainment is the canary's figure (`arm_stats` over the run's decisions and the "
        "outcomes the router recorded). Decision time is the records' `latency_us` (the "
        "engine's wall time, its lock included), all processes together; its CPU time "
        "(`locus_decision_cpu_seconds`), the router's parse + "
        "decide time and the lag are `/metrics` histograms summed over the processes, "
        'interpolated within their buckets. "Own views": the view off, each process '
        "deciding from its own (a control). CPU is over the replay and its drain, the routers' "
        "processes together."
    )
    return markdown_table(header, rows) + "\n\n" + legend
