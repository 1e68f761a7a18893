"""JSON samples and remote-write: accepted durably, refused whole when malformed, stored once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from telemetry.ingest import batch_process
from telemetry.models import Reading, TelemetryBatch
from telemetry.remote_write import encode_write_request
from telemetry.selectors import latest_node_state
from telemetry.services import batch_accept

pytestmark = pytest.mark.django_db


def _ts(seconds_ago: float = 0.0) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).isoformat()


def test_json_samples_are_accepted_with_202_and_stored(fleet: Any, push: Any) -> None:
    body = {
        "samples": [
            {"node": "muc-l4-1", "ts": _ts(20), "metrics": {"queue_depth": 3, "kv_usage": 0.5}},
            {"node": "muc-l4-1", "ts": _ts(10), "metrics": {"queue_depth": 4, "custom_x": 1.5}},
            {"node": "fra-h100-1", "ts": _ts(5), "metrics": {"vllm:num_requests_running": 7}},
        ]
    }
    response = push("samples", body)
    assert response.status_code == 202, response.content
    assert response.json()["samples"] == 3 and response.json()["values"] == 5
    assert Reading.objects.count() == 6  # 5 values + the derived `running` of fra-h100-1
    state = latest_node_state("muc-l4-1")
    assert state is not None and state.queue_depth == 4 and state.kv_usage == 0.5
    assert latest_node_state("fra-h100-1").running == 7  # type: ignore[union-attr]
    assert not TelemetryBatch.objects.exists()  # processed and gone from the inbox


def test_a_malformed_batch_is_refused_whole_naming_each_bad_sample(fleet: Any, push: Any) -> None:
    good = {"node": "muc-l4-1", "ts": _ts(), "metrics": {"queue_depth": 1}}
    samples = [
        good,
        good,
        good,
        {"node": "muc-l4-1", "ts": "yesterday", "metrics": {"a": 1}},
        {"node": "muc-l4-1", "ts": _ts(), "metrics": {"a": "high"}},
        {"node": "muc-l4-1", "ts": "2020-01-01T00:00:00", "metrics": {"a": 1}},
    ]
    response = push("samples", {"samples": samples})
    assert response.status_code == 400
    body = response.json()
    assert "3 of 6 samples are invalid" in body["message"]
    assert set(body["errors"]["samples"]) == {"3", "4", "5"}
    assert "ts" in body["errors"]["samples"]["3"]
    assert "metrics" in body["errors"]["samples"]["4"]
    assert "UTC offset" in body["errors"]["samples"]["5"]["ts"][0]
    assert not TelemetryBatch.objects.exists() and not Reading.objects.exists()


def test_it_refuses_samples_for_unknown_nodes(fleet: Any, push: Any) -> None:
    samples = [
        {"node": "muc-l4-1", "ts": _ts(), "metrics": {"a": 1}},
        {"node": "ghost-1", "ts": _ts(), "metrics": {"a": 1}},
    ]
    response = push("samples", {"samples": samples})
    assert response.status_code == 400
    assert "ghost-1" in response.json()["message"]
    assert response.json()["errors"]["samples"] == {"1": {"node": ["unknown node 'ghost-1'"]}}
    assert push("prometheus?node=ghost-1", "a 1\n", "text/plain").status_code == 400


def test_it_registers_unknown_nodes_cordoned_when_configured(
    fleet: Any, push: Any, settings: Any
) -> None:
    from console.inventory.models import Node

    settings.LOCUS_TELEMETRY_REGISTER_UNKNOWN_NODES = True
    settings.LOCUS_TELEMETRY_REGISTER_SITE = "muc-edge"
    settings.LOCUS_TELEMETRY_REGISTER_ACCELERATOR = "l4"
    response = push("samples", {"samples": [{"node": "new-1", "ts": _ts(), "metrics": {"a": 1}}]})
    assert response.status_code == 202, response.content
    node = Node.objects.get(name="new-1")
    assert node.state == "cordoned" and node.labels == {"registered_by": "telemetry"}


def test_processing_a_batch_twice_stores_it_once(fleet: Any) -> None:
    body = b'{"samples": [{"node": "muc-l4-1", "ts": "%s", "metrics": {"a": 1, "b": 2}}]}' % (
        _ts().encode()
    )
    accepted = batch_accept(kind="json", body=body)
    first = batch_process(batch_id=accepted.batch_id)
    assert first is not None and first.stored == 2
    assert batch_process(batch_id=accepted.batch_id) is None  # a redelivered task
    again = batch_accept(kind="json", body=body)  # the same data pushed again
    batch_process(batch_id=again.batch_id)
    assert Reading.objects.count() == 2


def test_counters_become_rates_and_resets_are_handled(fleet: Any, push: Any) -> None:
    t0 = datetime.now(UTC) - timedelta(seconds=60)

    def sample(offset: float, tokens: float) -> dict[str, Any]:
        ts = (t0 + timedelta(seconds=offset)).isoformat()
        return {"node": "muc-l4-1", "ts": ts, "metrics": {"vllm:generation_tokens_total": tokens}}

    push("samples", {"samples": [sample(0, 100), sample(10, 300)]})
    assert latest_node_state("muc-l4-1").gen_tokens_per_s == 20.0  # type: ignore[union-attr]
    push("samples", {"samples": [sample(20, 50)]})  # the server restarted: counter reset
    assert latest_node_state("muc-l4-1").gen_tokens_per_s == 5.0  # type: ignore[union-attr]


def test_remote_write_names_the_node_by_instance_and_maps_metrics(fleet: Any, push: Any) -> None:
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    body = encode_write_request(
        [
            (
                {
                    "__name__": "vllm:kv_cache_usage_perc",
                    "instance": "muc-l4-1:8000",
                    "job": "vllm",
                    "model_name": "llama",
                },
                [(0.25, now_ms - 1000), (0.5, now_ms)],
            ),
            (
                {"__name__": "DCGM_FI_DEV_GPU_UTIL", "node": "fra-h100-1", "gpu": "0"},
                [(80.0, now_ms)],
            ),
            ({"__name__": "up", "instance": "fra-h100-1"}, [(1.0, now_ms)]),
        ]
    )
    response = push("remote-write", body, "application/x-protobuf")
    assert response.status_code == 202, response.content
    assert latest_node_state("muc-l4-1").kv_usage == 0.5  # type: ignore[union-attr]
    assert latest_node_state("fra-h100-1").gpu_util == 0.8  # type: ignore[union-attr]
    # kv raw and derived at two times, DCGM raw and derived gpu_util, up
    assert Reading.objects.count() == 2 + 2 + 2 + 1


def test_remote_write_refuses_a_body_that_is_not_snappy_protobuf(fleet: Any, push: Any) -> None:
    response = push("remote-write", b"not snappy", "application/x-protobuf")
    assert response.status_code == 400
    assert "snappy" in response.json()["message"]


def test_prometheus_push_needs_a_node(fleet: Any, push: Any) -> None:
    response = push("prometheus", "a 1\n", "text/plain")
    assert response.status_code == 400 and "node" in response.json()["errors"]


def test_malformed_prometheus_text_is_refused(fleet: Any, push: Any) -> None:
    response = push("prometheus?node=muc-l4-1", "metric{oops 1\n", "text/plain")
    assert response.status_code == 400
    assert "Prometheus text" in response.json()["message"]
