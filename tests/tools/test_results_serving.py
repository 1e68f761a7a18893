"""tools/results/serving.py: the serving benchmarks' reports render into the right cells."""

from __future__ import annotations

from typing import Any

from tools.results.model import Report
from tools.results.serving import (
    decision_api,
    large_body,
    learned_why,
    live_deciders,
    picker_scale_out,
    receipts,
    router_overhead,
    shared_view,
)


def _cells(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def _http(rps: float, cpu_us: float) -> dict[str, float]:
    return {"rps": rps, "p50_ms": 1.0, "p99_ms": 9.5, "cpu_us": cpu_us}


def test_decision_api_compares_single_batch_and_the_free_engine_with_the_single_endpoint() -> None:
    runs = {"raw": _http(20000, 25), "decide": _http(2000, 400), "half": _http(1000, 410),
            "batch": _http(40, 20000), "free_batch": _http(250, 3500),
            "free_single": _http(6000, 140)}  # fmt: skip
    data = {"fleet": "f.yaml", "nodes": 26, "workers": 1, "database": "SQLite", "seconds": 8}
    table = decision_api([Report("f", {**data, "batch_size": 100, "runs": runs})])
    row = _cells(table.split("\n\n")[0])[0]
    assert row[:5] == ["f.yaml (26 nodes)", "20,000", "2,000", "10% (6%)", "400"]
    assert row[5:] == ["6,000 (140 µs)", "1.00 / 9.50", "4,000", "2.0x", "200", "12.5x"]


def test_shared_view_has_a_row_per_reader_count_in_order() -> None:
    def run(readers: int, p50: float) -> dict[str, Any]:
        lag = {"p50": p50, "p90": 2 * p50, "p99": 3 * p50, "max": 4 * p50, "mean": p50}
        return {"readers": readers, "rate_per_s": 500.0, "batch_ms": 5.0, "sent": 5000,
                "lag_ms": lag}  # fmt: skip

    rows = _cells(shared_view([Report("readers-3", run(3, 2.0)), Report("r1", run(1, 5.44))]))
    assert rows[0] == ["1", "500", "5", "5,000", "5.4", "10.9", "16.3", "21.8"]
    assert rows[1][0] == "3"


def test_picker_scale_out_orders_by_processes_then_the_view_off_before_on() -> None:
    def run(processes: int, shared: bool, rps: float) -> dict[str, Any]:
        peak = {"rps": rps, "p50_ms": 3.0, "p99_ms": 8.0, "server_cpu_us": 1500.0}
        return {"processes": processes, "shared_view": shared,
                "load_average": {"before": "4.10 3.00 2.00"},
                "runs": {"picker": {"max": peak, "half_max": peak}}}  # fmt: skip

    reports = [Report("a", run(2, True, 900)), Report("b", run(1, False, 517)),
               Report("c", run(1, True, 426))]  # fmt: skip
    rows = _cells(picker_scale_out(reports))
    assert [row[:3] for row in rows] == [
        ["1", "off", "517"],
        ["1", "on", "426"],
        ["2", "on", "900"],
    ]
    assert rows[0][3:] == ["3.00 / 8.00", "1,500", "4.10"]


def test_learned_why_gives_the_attribution_as_a_multiple_of_the_decision() -> None:
    rows = [{"model": "m", "candidates": 7, "decide_us": 70.0, "explain_us": 175.0}]
    table = learned_why([Report("f", {"rows": rows})])
    assert _cells(table.split("\n\n")[0]) == [["m", "7", "70", "175", "2.5x"]]


def test_router_overhead_puts_the_unloaded_run_first_and_converts_to_ms() -> None:
    def run(rate: float, achieved: float) -> dict[str, Any]:
        spread = {"p50": 5.25, "p99": 30.0}
        return {"offered_rate_per_s": rate, "background_calls_per_s": achieved,
                "probe_pairs": 300, "added_ms": spread, "router_ttft_ms": spread,
                "direct_ttft_ms": spread, "router_cpu_us_per_call": 6900.0,
                "decision_path_us_mean": 1170.0}  # fmt: skip

    table = router_overhead([Report("rate-20", run(20, 3.14)), Report("rate-0", run(0, 0))])
    rows = _cells(table.split("\n\n")[0])
    assert rows[0] == ["none", "300", "5.2 / 30.0", "5.2 / 30.0", "5.2 / 30.0", "6.9", "1.17"]
    assert rows[1][0] == "20/s → 3.1/s"


def test_receipts_gives_each_round_what_the_candidates_add() -> None:
    report = {"candidates": 5, "rounds": [{"none_us": 50.0, "top_us": 68.0}]}
    table = receipts([Report("f", report)])
    assert "top 5 estimated µs" in table
    assert _cells(table.split("\n\n")[0]) == [["1", "50.0", "68.0", "+18.0", "1.36x"]]


def test_large_body_gives_the_router_the_picker_and_who_answered_each_limit() -> None:
    spread = {"p50": 4.25, "p99": 20.0}
    level = {"concurrency": 8, "router": {"rps": 118.94, "ttft_ms": spread},
             "direct": {"rps": 319.5, "ttft_ms": spread}}  # fmt: skip
    router = {"tokens": 100_000, "body_bytes": 400_105, "pairs": 30, "added_ttft_ms": spread,
              "router_ttft_ms": spread, "direct_ttft_ms": spread, "levels": [level],
              "router_cpu_ms_per_call": 4.94, "decision_path_ms_mean": 5.16}  # fmt: skip
    picker = {"tokens": 100_000, "body_bytes": 400_105, "chunks": 13,
              "levels": [{"streams": 8, "rps": 137.4, "p50_ms": 50.7, "p99_ms": 162.4,
                          "server_cpu_us": 5880.0, "picker_ms_mean": 3.35}]}  # fmt: skip
    limits = {"limit_bytes": 16, "over": {"status": 413, "node": None},
              "at": {"status": 413, "node": "sim-1"}}  # fmt: skip
    data = {"router": [router], "picker": [picker], "router_limits": limits,
            "picker_limits": {"limit_bytes": 16, "one_5mib_message": {"status": None,
                                                                      "grpc": "X"}}}  # fmt: skip
    loops, probes, picked, limited = large_body([Report("r", data)]).split("\n\n")
    assert _cells(loops) == [["100,000 (400 KB)", "8", "118.9", "4.2 / 20.0", "319.5",
                              "4.2 / 20.0"]]  # fmt: skip
    assert _cells(probes)[0][-2:] == ["4.94", "5.16"]
    assert _cells(picked) == [["100,000 (400 KB), 13 chunks", "8", "137.4", "50.7 / 162.4",
                               "5.88", "3.35"]]  # fmt: skip
    assert "one byte over: 413, exactly the limit: 413 from node sim-1" in limited
    assert "5 MiB in one message: gRPC X" in limited


def _live_run(processes: int, shared: bool, attainment: float, p99_us: float) -> dict[str, Any]:
    lag = {"count": 10, "p50": 8.0, "p99": 40.0} if shared and processes > 1 else {"count": 0}
    return {
        "processes": processes,
        "shared_view": shared,
        "outcomes": 1400,
        "slo_attainment": attainment,
        "decision_us": {"p50": 700.0, "p99": p99_us},
        "router_overhead_ms": {"p50": 2.0, "p99": 20.0},
        "shared_view_lag_ms": lag,
        "router_cpu_s": 35.0,
        "scraper_cpu_s": 100.0,
        "load_average_before": [3.0, 3.0, 3.0],
    }


def test_live_deciders_compares_each_run_with_its_reports_first() -> None:
    runs = [_live_run(1, True, 0.98, 10_000.0), _live_run(4, True, 0.985, 15_000.0)]
    runs.append(_live_run(4, False, 0.975, 11_000.0))
    data = {"minutes": 5.0, "requests_per_s": 5.04, "runs": runs}
    rows = _cells(live_deciders([Report("fleet-demo-5min", data)]).split("\n\n")[0])
    assert [r[1] for r in rows] == ["1", "4", "4 (own views)"]
    assert [r[4] for r in rows] == ["+0.00 pt", "+0.50 pt", "-0.50 pt"]
    assert [r[6] for r in rows] == ["1.00", "1.50", "1.10"]
    assert [r[9] for r in rows] == ["–", "8.0 / 40.0", "–"]


def test_live_deciders_gives_the_decisions_cpu_time_where_the_report_has_it() -> None:
    measured = _live_run(4, True, 0.98, 15_000.0) | {
        "decision_cpu_us": {"count": 900, "p50": 650.0, "p99": 1_420.0}
    }
    runs = [_live_run(1, True, 0.98, 10_000.0), measured]  # the first from an older report
    data = {"minutes": 5.0, "requests_per_s": 5.04, "runs": runs}
    rows = _cells(live_deciders([Report("r", data)]).split("\n\n")[0])
    assert [r[7] for r in rows] == ["–", "650 / 1,420"]
