"""The real exporter files in tests/data/metrics ingest into the right node fields."""

from __future__ import annotations

from typing import Any

import pytest

from telemetry.selectors import latest_node_state
from tests.conftest import METRICS

pytestmark = pytest.mark.django_db
MIB = 1024 * 1024


def _series(client: Any, node: str, metric: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/v1/nodes/{node}/telemetry", {"metric": metric})
    assert response.status_code == 200, response.content
    return response.json()["series"]


def test_vllm_fixture_sets_queue_kv_prefix_and_ttft(fleet: Any, push: Any, client_for: Any) -> None:
    text = (METRICS / "vllm_metrics.txt").read_text()
    response = push("prometheus?node=muc-l4-1", text, "text/plain; version=0.0.4")
    assert response.status_code == 202, response.content
    state = latest_node_state("muc-l4-1")
    assert state is not None
    assert state.queue_depth == 0 and state.running == 0
    assert state.kv_usage == 0.0
    # prefix_cache_hits_total / prefix_cache_queries_total, cumulative on a first scrape
    assert state.prefix_hit_rate == pytest.approx(64 / 117)
    # One request in the (0.25, 0.5] bucket: histogram_quantile interpolates inside it.
    assert state.ttft_p50_s == pytest.approx(0.375)
    assert state.ttft_p95_s == pytest.approx(0.4875)
    assert state.e2e_p95_s == pytest.approx(0.95)
    # The counter needs two scrapes for a rate; the fixture's v0 gauge gives it meanwhile.
    assert state.gen_tokens_per_s == 0.0
    viewer = client_for("viewer")
    assert _series(viewer, "muc-l4-1", "queue_depth")[0]["points"][0][1] == 0.0
    # Unmapped series are kept, labels and all.
    gc = _series(viewer, "muc-l4-1", "python_gc_objects_collected_total")
    assert {s["labels"]["generation"]: s["points"][0][1] for s in gc} == {
        "0": 7431.0,
        "1": 4936.0,
        "2": 1661.0,
    }
    buckets = _series(viewer, "muc-l4-1", "vllm:time_to_first_token_seconds_bucket")
    assert len(buckets) == 17


def test_dcgm_l40s_scrape_sets_gpu_fields_and_keeps_per_gpu_series(
    fleet: Any, push: Any, client_for: Any
) -> None:
    text = (METRICS / "dcgm_scrape_l40s.prom").read_text()
    assert push("prometheus?node=fra-h100-1", text, "text/plain").status_code == 202
    state = latest_node_state("fra-h100-1")
    assert state is not None
    assert state.gpu_util == 0.0
    assert state.gpu_mem_used_bytes == 0.0
    assert state.gpu_mem_total_bytes == (45459 + 0 + 608) * MIB
    assert state.power_w == pytest.approx(35.686)
    free = _series(client_for("viewer"), "fra-h100-1", "DCGM_FI_DEV_FB_FREE")
    assert len(free) == 1
    assert free[0]["labels"]["gpu"] == "0"
    assert free[0]["labels"]["modelName"] == "NVIDIA L40S"
    assert free[0]["points"][0][1] == 45459.0


def test_dcgm_with_several_gpus_averages_util_and_sums_memory_and_power(
    fleet: Any, push: Any
) -> None:
    one = (METRICS / "dcgm_scrape_l40s.prom").read_text()
    lines = [ln for ln in one.splitlines() if ln.startswith("DCGM_")]
    second = [ln.replace('gpu="0"', 'gpu="1"').replace("GPU-5b4e", "GPU-ffff") for ln in lines]
    text = "\n".join(lines + second) + "\n"
    text = text.replace('DCGM_FI_DEV_GPU_UTIL{gpu="1"', 'DCGM_FI_DEV_GPU_UTIL_X{gpu="1"')
    text += 'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-ffff"} 100\n'
    assert push("prometheus?node=fra-h100-1", text, "text/plain").status_code == 202
    state = latest_node_state("fra-h100-1")
    assert state is not None
    assert state.gpu_util == pytest.approx(0.5)  # (0 % + 100 %) / 2
    assert state.gpu_mem_total_bytes == 2 * (45459 + 608) * MIB
    assert state.power_w == pytest.approx(2 * 35.686)


def test_every_default_dcgm_counter_is_mapped_or_kept_and_sentinels_are_dropped(
    fleet: Any, client_for: Any
) -> None:
    from telemetry.ingest import batch_process
    from telemetry.services import batch_accept

    fields = []
    for line in (METRICS / "dcgm_default_counters.csv").read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, kind = (part.strip() for part in line.split(",")[:2])
        if kind != "label":  # label fields become labels on the other series
            fields.append(name)
    assert len(fields) >= 20
    sentinel_fields = fields[::3]
    lines = []
    for i, name in enumerate(fields):
        # DCGM's int64 blank (~9.2e18), as reported for idle or unsupported fields
        value = "9223372036854775794" if name in sentinel_fields else str(i + 1)
        lines.append(f'{name}{{gpu="0",UUID="GPU-1",modelName="NVIDIA L40S"}} {value}')
    lines.append('DCGM_FI_DEV_MEM_CLOCK{gpu="1",UUID="GPU-2"} NaN')
    lines.append('DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-2"} +Inf')
    lines.append('DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-2"} 2147483632')  # int32 blank
    accepted = batch_accept(kind="prometheus", body="\n".join(lines).encode(), node="muc-l4-1")
    result = batch_process(batch_id=accepted.batch_id)
    assert result is not None
    assert result.dropped == {"sentinel": len(sentinel_fields) + 1, "nan": 1, "inf": 1}
    names = client_for("viewer").get("/api/v1/nodes/muc-l4-1/telemetry").json()["metrics"]
    for name in fields:
        if name in sentinel_fields:
            assert name not in names or name in ("DCGM_FI_DEV_GPU_TEMP",), name
        else:
            assert name in names, f"{name} neither mapped nor kept"
    temps = (
        client_for("viewer")
        .get("/api/v1/nodes/muc-l4-1/telemetry", {"metric": "DCGM_FI_DEV_GPU_TEMP"})
        .json()["series"]
    )
    assert all(s["labels"]["gpu"] == "0" for s in temps)  # GPU 1's blank was not stored
