"""The emulated node's `/metrics`, scraped by Locus's own scraper (telemetry.scraping) into the
inventory's telemetry, reports the node's queue, batch and KV as the node model has them."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
import yaml

from optimizer.emulator import EmulatedFleet, FleetThread
from optimizer.emulator.metrics import render_vllm
from optimizer.topology_files import load_topology, parse_topology
from telemetry.ingest import accepted_window
from telemetry.mapping import map_scrape
from telemetry.parsing import parse_prometheus_text
from telemetry.scraping import scrape_target
from telemetry.selectors import latest_node_state
from tests.conftest import CONTRACT_EXAMPLE, REPO

pytestmark = pytest.mark.django_db
METRICS = "tests/data/metrics/vllm_metrics.txt"


def _truth() -> Any:
    """The contract example (the `fleet` fixture's inventory) with an L4 that prefills in a
    blink and decodes a step every 100 ms, so the load holds still while it is scraped."""
    data = yaml.safe_load(CONTRACT_EXAMPLE.read_text())
    for profile in data["profiles"]:
        if profile["accelerator"] == "l4":
            profile.update(prefill_tokens_per_s=1e6, decode_step_ms=100, decode_step_ms_per_seq=0)
    return parse_topology(yaml.safe_dump(data), "truth.yaml")


def _scrape(url: str, capture: Any) -> None:
    with capture(execute=True):
        assert scrape_target(node="muc-l4-1", url=url).status == "ok"


# Serial: the token rate is the emulator thread's real-time decoding over a real 1 s between
# two scrapes, within 20%; a parallel worker's load would delay either.
@pytest.mark.serial
def test_scraped_metrics_follow_the_load(
    fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with FleetThread(load_topology(CONTRACT_EXAMPLE), truth=_truth(), port_base=0) as served:
        base = served.urls["muc-l4-1"]
        # 9 sequences of 4000 + 6000 tokens; the L4's KV (8 GiB at 128 KiB a token, 65536
        # tokens) holds 6 of them: 6 run, 3 wait.
        body = {"model": "llama-3.1-8b", "prompt": "x" * 16_000, "max_tokens": 6000}
        streams = [
            requests.post(
                base + "/v1/completions", json={**body, "stream": True}, stream=True, timeout=10
            )
            for _ in range(9)
        ]
        lines = [s.iter_lines() for s in streams]
        for line in lines[:6]:
            assert next(line).startswith(b"data: ")

        def state(f: EmulatedFleet) -> tuple[int, int, float]:
            engine = f.engines(0)[0]
            return engine.running, engine.waiting, engine.kv_usage

        assert served.call(state) == (6, 3, pytest.approx(60_000 / 65_536))
        _scrape(base + "/metrics", django_capture_on_commit_callbacks)
        time.sleep(1.0)
        _scrape(base + "/metrics", django_capture_on_commit_callbacks)
        seen = latest_node_state("muc-l4-1")
        assert seen is not None
        assert (seen.running, seen.queue_depth) == (6, 3)
        assert seen.kv_usage == pytest.approx(60_000 / 65_536)
        # 6 sequences, a token each every 100 ms.
        assert seen.gen_tokens_per_s == pytest.approx(60, rel=0.2)
        for s in streams:
            s.close()
        deadline = time.monotonic() + 5
        while served.call(state) != (0, 0, 0.0):
            assert time.monotonic() < deadline
            time.sleep(0.01)


def test_the_text_parses_like_a_real_vllm_exporters() -> None:
    """The rendered families map to what a real vLLM's `/metrics` maps to (the fixture is a
    v0 engine's: the same canonical fields, some under their older names)."""
    real = _observation((REPO / METRICS).read_text())
    with FleetThread(load_topology(CONTRACT_EXAMPLE), port_base=0) as served:
        body = {"model": "llama-3.1-8b", "prompt": "hello " * 100, "max_tokens": 3}
        requests.post(served.urls["fra-h100-1"] + "/v1/completions", json=body, timeout=10)
        text = requests.get(served.urls["fra-h100-1"] + "/metrics", timeout=5).text
        ours = _observation(text)
        assert text.encode() == served.call(lambda f: render_vllm(f.engines(1)))
    assert {"queue_depth", "running", "kv_usage"} <= set(ours.gauges) & set(real.gauges)
    assert {"gen_tokens"} <= set(ours.counters) & set(real.counters)
    assert {"prefix_hits", "prefix_queries"} <= set(ours.counters)
    assert set(ours.histograms) == {"ttft", "e2e"} <= set(real.histograms)
    assert ours.counters["gen_tokens"] == {"engine=0,model_name=llama-3.1-8b": 3.0}
    assert ours.counters["prefix_queries"] == {"engine=0,model_name=llama-3.1-8b": 150.0}


def _observation(text: str) -> Any:
    window = accepted_window(datetime.now(UTC))
    [scrape] = parse_prometheus_text(text, node="n", window=window)
    return map_scrape(scrape).observation
