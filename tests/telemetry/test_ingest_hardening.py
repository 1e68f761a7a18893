"""202 means durably accepted and processed (docs/hardening.md): what the database cannot
store is refused before the answer (400 naming the sample, line or series), a decompression
bomb is refused before it is decompressed (413), and a batch already in the inbox that holds
something the database refuses still stores its valid values."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import cramjam
import pytest
from django.db import connection
from prometheus_client import REGISTRY

from telemetry.ingest import ingest_batch
from telemetry.models import Reading, Series, TelemetryBatch
from telemetry.remote_write import encode_write_request

pytestmark = pytest.mark.django_db


def _now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


def _refused() -> float:
    return REGISTRY.get_sample_value("locus_telemetry_values_refused_total") or 0.0


def test_json_samples_with_nul_in_a_metric_name_are_refused_naming_the_sample(
    fleet: Any, push: Any
) -> None:
    now = datetime.now(UTC).isoformat()
    good = {"node": "muc-l4-1", "ts": now, "metrics": {"queue_depth": 1}}
    bad = {"node": "muc-l4-1", "ts": now, "metrics": {"queue\x00depth": 2}}
    response = push("samples", {"samples": [good, bad]})
    assert response.status_code == 400, response.content
    problem = response.json()["errors"]["samples"]["1"]["metrics"]
    assert "NUL" in json.dumps(problem)
    response = push("samples", {"samples": [good, {**good, "node": "muc\x00"}]})
    assert response.status_code == 400 and "NUL" in json.dumps(response.json()["errors"])
    assert not TelemetryBatch.objects.exists() and not Reading.objects.exists()


def test_prometheus_text_with_nul_in_a_label_value_is_refused_naming_the_line(
    fleet: Any, push: Any
) -> None:
    text = (
        'vllm:num_requests_running{model_name="a"} 1\n'
        'vllm:num_requests_waiting{model_name="a\x00b"} 2\n'
    )
    response = push("prometheus?node=muc-l4-1", text.encode(), "text/plain")
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["body"] == {
        "line 2": [response.json()["errors"]["body"]["line 2"][0]]
    }
    assert "NUL" in response.json()["message"] and "Line 2" in response.json()["message"]
    assert not TelemetryBatch.objects.exists()


def test_remote_write_with_nul_in_a_label_is_refused_naming_the_series(
    fleet: Any, push: Any
) -> None:
    body = encode_write_request(
        [
            ({"__name__": "queue_depth", "instance": "muc-l4-1"}, [(1.0, _now_ms())]),
            ({"__name__": "kv", "instance": "muc-l4-1", "gpu": "0\x00"}, [(1.0, _now_ms())]),
        ]
    )
    response = push("remote-write", body, "application/x-protobuf")
    assert response.status_code == 400, response.content
    assert list(response.json()["errors"]["timeseries"]) == ["1"]
    assert "NUL" in response.json()["errors"]["timeseries"]["1"]["labels"][0]
    assert not TelemetryBatch.objects.exists()


def test_remote_write_that_decompresses_beyond_the_limit_is_413(
    fleet: Any, push: Any, settings: Any
) -> None:
    settings.LOCUS_TELEMETRY_MAX_DECOMPRESSED_BYTES = 1024 * 1024
    bomb = bytes(cramjam.snappy.compress_raw(b"\x00" * (4 * 1024 * 1024)))
    assert len(bomb) < 200_000  # small on the wire, 4 MiB once decompressed
    response = push("remote-write", bomb, "application/x-protobuf")
    assert response.status_code == 413, response.content
    assert "4194304 bytes" in response.json()["message"]
    # A header claiming 4 GiB is refused before anything is decompressed.
    liar = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00" * 16
    response = push("remote-write", liar, "application/x-protobuf")
    assert response.status_code == 413
    good = encode_write_request(
        [({"__name__": "queue_depth", "instance": "muc-l4-1"}, [(1.0, _now_ms())])]
    )
    assert push("remote-write", good, "application/x-protobuf").status_code == 202
    assert not TelemetryBatch.objects.exists()  # processed by the eager worker


def _inbox(kind: str, payload: bytes, node: str = "") -> int:
    """A batch accepted by older code, before these checks existed."""
    now = datetime.now(UTC)
    return TelemetryBatch.objects.create(
        kind=kind, node=node, payload=payload, received_at=now, enqueued_at=now
    ).pk


def test_the_worker_stores_the_valid_lines_of_a_batch_holding_a_nul(fleet: Any) -> None:
    text = 'queue_depth 3\nvllm:num_requests_waiting{model_name="a\x00b"} 2\nkv_usage 0.5\n'
    batch_id = _inbox("prometheus", text.encode(), node="muc-l4-1")
    before = _refused()
    result = ingest_batch(batch_id)
    assert result is not None and result["stored"] >= 2
    assert _refused() == before + 1  # the one line holding the NUL
    assert not TelemetryBatch.objects.filter(pk=batch_id).exists()
    metrics = set(Series.objects.values_list("metric", flat=True))
    assert {"queue_depth", "kv_usage"} <= metrics
    assert not any(
        "\x00" in value
        for labels in Series.objects.values_list("labels", flat=True)
        for value in labels.values()
    )


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="SQLite does not enforce lengths")
def test_a_series_the_database_refuses_does_not_take_the_batch_down(fleet: Any) -> None:
    """A metric name longer than the series column: PostgreSQL refuses that one series; the
    worker stores the others, counts the refused value and finishes the batch."""
    assert connection.vendor == "postgresql"
    long_name = "m" * 300
    text = f"queue_depth 3\n{long_name} 1\nkv_usage 0.5\n"
    batch_id = _inbox("prometheus", text.encode(), node="muc-l4-1")
    before = _refused()
    result = ingest_batch(batch_id)
    assert result is not None and result["refused"] == 1
    assert _refused() == before + 1
    assert not TelemetryBatch.objects.filter(pk=batch_id).exists()
    metrics = set(Series.objects.values_list("metric", flat=True))
    assert {"queue_depth", "kv_usage"} <= metrics and long_name not in metrics
