"""The router benchmark's report: rows built from raw records, and the contract's shape.

The fast tests build rows from hand-made raw records on the demo fleet; the slow one runs the
harness's quick mode end to end (emulated fleet, a peer router, the replay) when the bench
venv and the emulator are there.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from optimizer.topology_files import load_topology
from routers.report import check_shape, extras, markdown_table, network_s, router_row

REPO = Path(__file__).resolve().parents[3]
DEMO = load_topology(REPO / "optimizer" / "topologies" / "fleet-demo.yaml")


def _plan(i: int, source: str, slo: str, model: str = "llama-3.1-8b") -> dict[str, Any]:
    return {
        "i": i,
        "at_s": float(i),
        "model": model,
        "source": source,
        "slo": slo,
        "prompt_tokens": 1000,
        "max_tokens": 10,
    }


def _served(i: int, node: str, ttft: float = 500.0, e2e: float = 1500.0) -> dict[str, Any]:
    return {"i": i, "status": 200, "node": node, "ttft_ms": ttft, "e2e_ms": e2e, "tokens": 10}


def _raw(plan: list[dict[str, Any]], results: list[dict[str, Any]], **over: Any) -> dict[str, Any]:
    raw = {
        "plan": plan,
        "results": [r | {"ok": r.get("status") == 200} for r in results],
        "probes": [{"router": 5.0, "direct": 4.0}, {"router": 7.0, "direct": 4.5}],
        "router_cpu_s": 0.003,
        "forwards_source": True,
        "fleet_source": "eu-analytics",
        "counters": [],
    }
    return raw | over


def test_it_scores_a_misplaced_request_as_a_residency_violation_and_a_miss() -> None:
    raw = _raw(
        [
            _plan(0, "munich-app", "interactive-eu"),
            _plan(1, "munich-app", "interactive-eu"),
            _plan(2, "nyc-app", "interactive"),
        ],
        [
            _served(0, "fra-a100-1"),
            _served(1, "use-h100-1"),
            {"i": 2, "status": 400, "node": "muc-orin-2", "error": "no link"},
        ],
    )
    row = router_row(DEMO, raw)
    assert row["residency_violations"] == 1
    assert row["slo_attainment"] == pytest.approx(1 / 3, abs=1e-4)
    assert row["cpu_us_per_request"] == pytest.approx(1000.0)
    # Pairs differ by 1.0 and 2.5 ms.
    assert row["added_ms"]["p50"] == 1.75
    assert row["added_ms"]["p99"] == pytest.approx(2.485, abs=0.01)


def test_it_moves_a_router_that_dropped_the_source_to_the_requests_own_source() -> None:
    plan = [_plan(0, "munich-app", "interactive-eu")]
    kept = router_row(DEMO, _raw(plan, [_served(0, "fra-a100-1")]))
    moved = router_row(DEMO, _raw(plan, [_served(0, "fra-a100-1")], forwards_source=False))
    own = network_s(DEMO, "muc-edge", "fra-a100-1", 1000)
    seen = network_s(DEMO, "fra-core", "fra-a100-1", 1000)
    assert own is not None and seen is not None and own > seen
    shift = (own - seen) * 1000
    assert moved["ttft_ms"]["p50"] == pytest.approx(kept["ttft_ms"]["p50"] + shift, abs=0.01)
    assert moved["e2e_ms"]["p50"] == pytest.approx(kept["e2e_ms"]["p50"] + shift, abs=0.01)


def test_a_request_whose_own_source_cannot_reach_the_node_fails() -> None:
    # nyc-app (nyc-edge) has no route to muc-orin-2 (muc-device); the fleet's default did.
    raw = _raw(
        [_plan(0, "nyc-app", "interactive")],
        [_served(0, "muc-orin-2")],
        forwards_source=False,
        fleet_source="device-assistant",
    )
    assert router_row(DEMO, raw)["slo_attainment"] == 0.0


def test_it_counts_refusals_caused_only_by_the_dropped_source() -> None:
    # The fleet's default source (eu-analytics, fra-core) has no route to nyc-device; nyc-app
    # (nyc-edge) has one, munich-app (muc-edge) has not.
    refused = {"status": 400, "node": "nyc-orin-2", "error": "no link"}
    raw = _raw(
        [_plan(0, "nyc-app", "interactive"), _plan(1, "munich-app", "interactive-eu")],
        [{"i": 0} | refused, {"i": 1} | refused],
        forwards_source=False,
    )
    assert extras(DEMO, raw)["unreachable_unseen"] == 1
    assert extras(DEMO, raw | {"forwards_source": True})["unreachable_unseen"] == 0


def test_cost_follows_the_optimizers_definition() -> None:
    # fra-a100-1: llama-3.1-8b prefills 9000 tokens/s, decode step 13 ms + 0.2 ms per
    # sequence, max batch 96, 2.2 USD/h; from muc-edge the link charges 0.01 USD/GB.
    raw = _raw(
        [_plan(0, "munich-app", "interactive-eu")],
        [_served(0, "fra-a100-1", ttft=500.0, e2e=1500.0)],
        counters=[{"node": "fra-a100-1", "model": "llama-3.1-8b", "prompt": 4000, "hits": 1000}],
    )
    prefill_s = 1000 * (1 - 0.25) / 9000
    step_s = 1.0 / 9  # 9 rounds after the first token in 1 s
    batch = min((step_s - 0.013) / 0.0002, 96)
    decode_s = 9 * step_s / batch
    egress = 4 * 1000 * 0.01 / 1e9
    want = (2.2 * (prefill_s + decode_s) / 3600 + egress) * 1000
    assert router_row(DEMO, raw)["cost_per_1k_requests"] == pytest.approx(want, rel=1e-3)


def test_the_report_shape_is_the_contracts_and_a_missing_key_is_named() -> None:
    row = router_row(
        DEMO, _raw([_plan(0, "munich-app", "interactive-eu")], [_served(0, "fra-a100-1")])
    )
    report = {"fleets": {"multi-site": {"heavy": {"round-robin": row}}}}
    assert check_shape(report) == []
    assert "| multi-site | heavy | round-robin | 100.0 |" in markdown_table(report)
    del row["added_ms"]
    assert check_shape(report) == ["multi-site/heavy/round-robin: missing added_ms"]
    assert check_shape({"fleets": {"moon": {}}}) == ["unknown fleet 'moon'"]


def _free_base(count: int) -> int:
    for base in range(21000, 30000, 100):
        try:
            for port in range(base, base + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError("no free block of ports")


@pytest.mark.slow
def test_quick_mode_writes_a_contract_shaped_report(tmp_path: Path) -> None:
    bench_python = REPO / "var" / "bench-venv" / "bin" / "python"
    if not bench_python.exists() or importlib.util.find_spec("optimizer.emulator") is None:
        pytest.skip("needs the bench venv (make bench-routers) and serve-fleet")
    out = tmp_path / "routers.json"
    argv = [sys.executable, str(REPO / "tests" / "bench" / "bench_routers.py"), "--quick"]
    argv += ["--fleets", "single-site", "--loads", "moderate", "--routers", "round-robin"]
    argv += ["--out", str(out), "--fresh", "--port-base", str(_free_base(60))]
    subprocess.run(argv, check=True, timeout=280)
    report = json.loads(out.read_text())
    assert check_shape(report) == []
    row = report["fleets"]["single-site"]["moderate"]["round-robin"]
    assert row["slo_attainment"] > 0 and row["ttft_ms"]["p50"] > 0
    details = json.loads((tmp_path / "routers-details.json").read_text())
    assert details["fleets"]["single-site"]["moderate"]["round-robin"]["served"] > 0
    assert sorted(p.name for p in tmp_path.glob("routers-*.png"))
