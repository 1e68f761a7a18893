"""A fleet for the exploration probe's tests: two H100s the policy prefers for Munich's
interactive traffic, an A10 in Frankfurt it never picks while they are idle (slower and
dearer) but whose estimate meets the interactive SLO for short prompts, and an A10 in the US
that residency keeps from EU traffic. A calibration whose report could not fit llama@a10
names both A10s."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from console.placement.engine.runtime import Runtime
from console.twin.choices import ProposalState, RunStatus
from console.twin.models import CalibrationRun
from optimizer.decide.state.snapshot import NodeLoad

PROBE_FLEET = """
version: 1
sites:
  - {name: muc-edge, tier: edge, region: eu-central, jurisdiction: EU}
  - {name: fra-core, tier: regional, region: eu-central, jurisdiction: EU}
  - {name: use-cloud, tier: cloud, region: us-east, jurisdiction: US}
links:
  - {a: muc-edge, b: fra-core, rtt_ms: 9, bandwidth_gbps: 10, egress_usd_per_gb: 0.01}
  - {a: fra-core, b: use-cloud, rtt_ms: 88, bandwidth_gbps: 100, egress_usd_per_gb: 0.05}
  - {a: muc-edge, b: use-cloud, rtt_ms: 95, bandwidth_gbps: 5, egress_usd_per_gb: 0.05}
accelerators:
  - {name: h100, memory_gib: 80}
  - {name: a10g, memory_gib: 24}
models:
  - {name: llama-3.1-8b, memory_gib: 16, kv_bytes_per_token: 131072}
profiles:
  - {model: llama-3.1-8b, accelerator: h100, prefill_tokens_per_s: 18000,
     decode_step_ms: 9, decode_step_ms_per_seq: 0.12, max_batch: 128}
  - {model: llama-3.1-8b, accelerator: a10g, prefill_tokens_per_s: 2500,
     decode_step_ms: 30, decode_step_ms_per_seq: 0.5, max_batch: 32}
nodes:
  - {name: fra-h100-1, site: fra-core, accelerator: h100, gpus: 1, usd_per_hour: 2.0,
     models: [llama-3.1-8b]}
  - {name: fra-h100-2, site: fra-core, accelerator: h100, gpus: 1, usd_per_hour: 2.0,
     models: [llama-3.1-8b]}
  - {name: fra-a10-1, site: fra-core, accelerator: a10g, gpus: 1, usd_per_hour: 4.0,
     models: [llama-3.1-8b]}
  - {name: use-a10-1, site: use-cloud, accelerator: a10g, gpus: 1, usd_per_hour: 4.0,
     models: [llama-3.1-8b]}
sources:
  - {name: munich-app, site: muc-edge, share: 1.0, slo: interactive}
slos:
  - {name: interactive, ttft_p95_ms: 800, e2e_p95_ms: 15000, residency: EU}
"""

# 900 prompt tokens: 0.36 s of A10 prefill plus the 9 ms link, within the 800 ms target.
SHORT = {
    "model": "llama-3.1-8b",
    "source": "munich-app",
    "prompt_tokens": 900,
    "max_output_tokens": 100,
}
# 4,000 prompt tokens: 1.6 s on the A10, over the target; 0.23 s on an H100.
LONG = {**SHORT, "prompt_tokens": 4000}
A10S = {"fra-a10-1", "use-a10-1"}
NODES = ("fra-h100-1", "fra-h100-2", "fra-a10-1", "use-a10-1")


def idle(rt: Runtime, nodes: Iterable[str] = NODES) -> None:
    """Fresh idle telemetry for every node (of this fleet unless named): the engine forgets
    its own sends (each counts as queued until a newer sample), so every decision sees the
    idle fleet."""
    snap = rt.engine.snapshot
    assert snap is not None
    now = time.time()
    loads = {n: NodeLoad(queue_depth=0, running=0, kv_usage=0.0, measured_at=now) for n in nodes}
    rt.engine.install(dataclasses.replace(snap, loads=loads))


def calibration_run(*, unfitted: str = "a10g", status: str = RunStatus.SUCCEEDED) -> CalibrationRun:
    """A finished calibration whose report fitted llama@h100 and could not fit llama@`unfitted`
    (the report's shape: optimizer/calibration/report.py)."""
    now = timezone.now()
    profiles: list[dict[str, Any]] = [
        {"model": "llama-3.1-8b", "accelerator": "h100", "status": "fitted", "samples": 900},
        {
            "model": "llama-3.1-8b",
            "accelerator": unfitted,
            "status": "insufficient_data",
            "samples": 3,
        },
    ]
    return CalibrationRun.objects.create(
        since=now,
        until=now,
        min_samples=50,
        status=status,
        report={"profiles": profiles},
        proposal=ProposalState.PENDING if status == RunStatus.SUCCEEDED else "",
        requested_by_name="operator-1",
    )
