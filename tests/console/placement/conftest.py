"""Fixtures for the decision engine: a fresh engine per test, refreshed and flushed by hand."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from console.placement.engine.runtime import Runtime, reset_runtime, runtime
from optimizer.decide.state.snapshot import NodeLoad
from tests.conftest import TOPOLOGIES

# A short interactive request from the example fleet's Munich source.
SMALL_REQUEST = {
    "model": "llama-3.1-8b",
    "source": "munich-app",
    "prompt_tokens": 900,
    "max_output_tokens": 100,
}

MIXED_FLEET = """
version: 1
sites:
  - {name: muc-edge, tier: edge, region: eu-central, jurisdiction: EU}
  - {name: fra-core, tier: regional, region: eu-central, jurisdiction: EU}
  - {name: use-cloud, tier: cloud, region: us-east, jurisdiction: US}
  - {name: island, tier: edge, region: nowhere, jurisdiction: EU}
links:
  - {a: muc-edge, b: fra-core, rtt_ms: 9, bandwidth_gbps: 10, egress_usd_per_gb: 0.01}
  - {a: fra-core, b: use-cloud, rtt_ms: 88, bandwidth_gbps: 100, egress_usd_per_gb: 0.05}
  - {a: muc-edge, b: use-cloud, rtt_ms: 95, bandwidth_gbps: 5, egress_usd_per_gb: 0.05}
accelerators:
  - {name: l4, memory_gib: 24}
  - {name: h100, memory_gib: 80}
models:
  - {name: llama-3.1-8b, memory_gib: 16, kv_bytes_per_token: 131072}
  - {name: qwen2.5-7b, memory_gib: 15, kv_bytes_per_token: 57344}
profiles:
  - {model: llama-3.1-8b, accelerator: h100, prefill_tokens_per_s: 18000,
     decode_step_ms: 9, decode_step_ms_per_seq: 0.12, max_batch: 128}
  - {model: llama-3.1-8b, accelerator: l4, prefill_tokens_per_s: 3500,
     decode_step_ms: 28, decode_step_ms_per_seq: 0.5, max_batch: 32}
  - {model: qwen2.5-7b, accelerator: l4, prefill_tokens_per_s: 3800,
     decode_step_ms: 26, decode_step_ms_per_seq: 0.5, max_batch: 32}
nodes:
  - {name: muc-l4-1, site: muc-edge, accelerator: l4, gpus: 1, usd_per_hour: 0.8,
     models: [llama-3.1-8b]}
  - {name: fra-h100-1, site: fra-core, accelerator: h100, gpus: 1, usd_per_hour: 2.9,
     models: [llama-3.1-8b]}
  - {name: fra-h100-2, site: fra-core, accelerator: h100, gpus: 1, usd_per_hour: 2.9,
     models: [llama-3.1-8b]}
  - {name: fra-h100-3, site: fra-core, accelerator: h100, gpus: 1, usd_per_hour: 2.9,
     models: [llama-3.1-8b]}
  - {name: fra-h100-4, site: fra-core, accelerator: h100, gpus: 1, usd_per_hour: 2.9,
     models: [llama-3.1-8b]}
  - {name: fra-h100-5, site: fra-core, accelerator: h100, gpus: 1, usd_per_hour: 2.9,
     models: [llama-3.1-8b]}
  - {name: use-h100-1, site: use-cloud, accelerator: h100, gpus: 1, usd_per_hour: 2.2,
     models: [llama-3.1-8b]}
  - {name: muc-qwen-1, site: muc-edge, accelerator: l4, gpus: 1, usd_per_hour: 0.8,
     models: [qwen2.5-7b]}
  - {name: island-h100-1, site: island, accelerator: h100, gpus: 1, usd_per_hour: 1.0,
     models: [llama-3.1-8b]}
sources:
  - {name: munich-app, site: muc-edge, share: 0.7, slo: interactive}
  - {name: us-batch, site: use-cloud, share: 0.3, slo: batch}
slos:
  - {name: interactive, ttft_p95_ms: 800, e2e_p95_ms: 15000, residency: EU}
  - {name: batch, ttft_p95_ms: 10000, e2e_p95_ms: 120000, max_usd_per_1k: 2.0}
"""


@pytest.fixture
def engine_settings(settings: Any) -> Iterator[Any]:
    settings.LOCUS_ENGINE_BACKGROUND = False
    settings.LOCUS_BREAKER = {
        "consecutive_failures": 3,
        "window_s": 60.0,
        "error_rate": 0.5,
        "min_requests": 10,
        "open_s": 0.2,
        "half_open_probes": 1,
        "close_after_successes": 2,
    }
    from django.core.cache import cache

    cache.clear()
    reset_runtime()
    yield settings
    reset_runtime()
    cache.clear()


@pytest.fixture
def mixed_fleet(db: Any, engine_settings: Any) -> Runtime:
    """A fleet with a node for every rejection reason; the engine refreshed on it."""
    from console.inventory.services import topology_import
    from optimizer.topology_files import parse_topology

    topology_import(topology=parse_topology(MIXED_FLEET))
    rt = runtime()
    rt.refresh()
    return rt


@pytest.fixture
def example_engine(fleet: Any, engine_settings: Any) -> Runtime:
    rt = runtime()
    rt.refresh()
    return rt


@pytest.fixture
def set_loads() -> Callable[..., None]:
    """Install telemetry for nodes into the engine's snapshot: name -> (queue, running, kv,
    age_s)."""

    def apply(**loads: tuple[int, int, float, float]) -> None:
        rt = runtime()
        snap = rt.engine.snapshot
        assert snap is not None
        now = time.time()
        new = {
            name.replace("_", "-"): NodeLoad(
                queue_depth=q, running=r, kv_usage=kv, measured_at=now - age
            )
            for name, (q, r, kv, age) in loads.items()
        }
        rt.engine.install(dataclasses.replace(snap, loads={**snap.loads, **new}))

    return apply


__all__ = ["MIXED_FLEET", "TOPOLOGIES"]
