"""Ingest refuses values and times it cannot store (400, never 500), and remote-write skips
series of nodes the inventory does not know instead of refusing the whole request."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY

from console.inventory.models import Node
from telemetry.ingest import batch_process
from telemetry.models import Reading, Series, TelemetryBatch
from telemetry.remote_write import encode_write_request
from telemetry.selectors import latest_node_state

pytestmark = pytest.mark.django_db

HUGE = int("9" * 400)  # a JSON integer no float64 holds: float() raises OverflowError


def _now_ms(offset_s: float = 0.0) -> int:
    return int((datetime.now(UTC).timestamp() + offset_s) * 1000)


def _ts(seconds_ago: float = 0.0) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).isoformat()


def _skipped(kind: str = "remote_write") -> float:
    value = REGISTRY.get_sample_value("locus_telemetry_series_skipped_total", {"kind": kind})
    return value or 0.0


# --- 1. JSON samples: values no float64 holds ------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    ["9" * 400, "-" + "9" * 400, "1e999", "NaN", "Infinity", "-Infinity"],
    ids=["huge-int", "huge-negative-int", "float-overflow", "nan", "inf", "-inf"],
)
def test_samples_with_a_value_no_float_holds_are_refused_naming_index_and_metric(
    fleet: Any, push: Any, raw: str
) -> None:
    good = {"node": "muc-l4-1", "ts": _ts(), "metrics": {"queue_depth": 1}}
    bad = {"node": "muc-l4-1", "ts": _ts(), "metrics": {"ok": 1, "huge": "RAW"}}
    body = json.dumps({"samples": [good, bad]}).replace('"RAW"', raw)  # raw JSON number text
    response = push("samples", body.encode(), "application/json")
    assert response.status_code == 400, response.content
    answer = response.json()
    assert "1 of 2 samples are invalid" in answer["message"]
    assert set(answer["errors"]["samples"]) == {"1"}
    problems = answer["errors"]["samples"]["1"]["metrics"]
    assert len(problems) == 1 and "'huge'" in problems[0] and "finite" in problems[0]
    assert not TelemetryBatch.objects.exists() and not Reading.objects.exists()


def test_a_batch_with_a_huge_value_already_in_the_inbox_stores_its_good_values(
    fleet: Any,
) -> None:
    """A batch accepted before values were checked: the worker drops the bad value (as an
    infinity, counted) and stores the rest instead of failing the batch forever."""
    samples = [
        {"node": "muc-l4-1", "ts": _ts(5), "metrics": {"queue_depth": 3, "big": HUGE}},
        {"node": "fra-h100-1", "ts": _ts(1), "metrics": {"queue_depth": 5}},
    ]
    body = json.dumps({"samples": samples}).encode()  # Python writes the 400 digits as is
    assert b"9" * 400 in body
    now = datetime.now(UTC)
    batch = TelemetryBatch.objects.create(
        kind="json", node="", payload=body, received_at=now, enqueued_at=now
    )
    result = batch_process(batch_id=batch.pk)
    assert result is not None and result.stored == 2 and result.dropped == {"inf": 1}
    assert not TelemetryBatch.objects.exists()
    assert sorted(Series.objects.values_list("node", "metric")) == [
        ("fra-h100-1", "queue_depth"),
        ("muc-l4-1", "queue_depth"),
    ]
    assert latest_node_state("muc-l4-1").queue_depth == 3  # type: ignore[union-attr]


# --- 2. Sample times: Prometheus text and remote-write ---------------------------------------


@pytest.mark.parametrize(
    ("stamp", "reason"),
    [
        ("99999999999999999999", "in the future"),  # no datetime holds it (was a 500)
        ("0", "older than the retention"),  # 1970: would create a partition per day since
        (str(_now_ms(400 * 86400)), "in the future"),  # a year ahead: fresh forever
        (str(_now_ms(-8 * 86400)), "older than the retention"),
    ],
    ids=["overflow", "epoch-zero", "a-year-ahead", "past-retention"],
)
def test_prometheus_text_with_a_timestamp_outside_the_window_is_refused(
    fleet: Any, push: Any, stamp: str, reason: str
) -> None:
    text = f'queue_depth 1\nfoo{{gpu="0"}} 1 {stamp}\n'
    response = push("prometheus?node=muc-l4-1", text, "text/plain")
    assert response.status_code == 400, response.content
    answer = response.json()
    assert 'foo{gpu="0"}' in answer["message"] and "nothing was stored" in answer["message"]
    assert reason in answer["errors"]["series"]['foo{gpu="0"}'][0]
    assert not TelemetryBatch.objects.exists() and not Reading.objects.exists()


def test_prometheus_text_with_timestamps_inside_the_window_is_stored(fleet: Any, push: Any) -> None:
    text = f"queue_depth 2 {_now_ms(-30)}\nfoo 1 {_now_ms(60)}\nbar 3\n"
    response = push("prometheus?node=muc-l4-1", text, "text/plain")
    assert response.status_code == 202, response.content
    assert Reading.objects.count() == 3


def test_the_window_follows_the_same_settings_as_json_samples(
    fleet: Any, push: Any, settings: Any
) -> None:
    settings.LOCUS_TELEMETRY_MAX_FUTURE_SECONDS = 10.0
    ahead = _now_ms(60)
    text = f"foo 1 {ahead}\n"
    response = push("prometheus?node=muc-l4-1", text, "text/plain")
    assert response.status_code == 400
    assert "more than 10 s in the future" in response.json()["errors"]["series"]["foo"][0]
    sample = {"node": "muc-l4-1", "ts": _ts(-60), "metrics": {"foo": 1}}
    response = push("samples", {"samples": [sample]})
    assert "more than 10 s in the future" in response.json()["errors"]["samples"]["0"]["ts"][0]


@pytest.mark.parametrize(
    ("stamp", "reason"),
    [
        (2**62, "in the future"),  # was a 500 (ValueError: year out of range)
        (-(2**62), "older than the retention"),
        (0, "older than the retention"),
        (_now_ms(365 * 86400), "in the future"),
    ],
    ids=["2^62", "-2^62", "epoch-zero", "a-year-ahead"],
)
def test_remote_write_with_a_timestamp_outside_the_window_is_refused(
    fleet: Any, push: Any, stamp: int, reason: str
) -> None:
    body = encode_write_request(
        [
            ({"__name__": "queue_depth", "instance": "muc-l4-1"}, [(1.0, _now_ms())]),
            ({"__name__": "foo", "instance": "muc-l4-1", "gpu": "0"}, [(1.0, stamp)]),
        ]
    )
    response = push("remote-write", body, "application/x-protobuf")
    assert response.status_code == 400, response.content
    answer = response.json()
    assert "nothing was stored" in answer["message"] and "foo{" in answer["message"]
    problem = answer["errors"]["timeseries"]["1"]["samples"][0]
    assert 'foo{gpu="0",instance="muc-l4-1"}' in problem and reason in problem
    assert not TelemetryBatch.objects.exists() and not Reading.objects.exists()


# --- 3. Remote-write series of unknown nodes ---------------------------------------------------


def test_remote_write_stores_known_nodes_and_skips_the_others(fleet: Any, push: Any) -> None:
    before = _skipped()
    now = _now_ms()
    body = encode_write_request(
        [
            ({"__name__": "vllm:num_requests_waiting", "instance": "muc-l4-1:8000"}, [(4.0, now)]),
            ({"__name__": "up", "instance": "localhost:9090", "job": "prometheus"}, [(1.0, now)]),
            (
                {"__name__": "prometheus_tsdb_head_series", "instance": "localhost:9090"},
                [(10.0, now)],
            ),
            ({"__name__": "job:up:sum", "job": "vllm"}, [(3.0, now)]),  # a recording rule
        ]
    )
    response = push("remote-write", body, "application/x-protobuf")
    assert response.status_code == 202, response.content
    answer = response.json()
    assert answer["batch_id"] is not None and answer["values"] == 1
    assert answer["skipped_series"] == 3
    assert answer["unknown_nodes"] == ["(no instance or node label)", "localhost:9090"]
    assert _skipped() == before + 3
    assert {n for (n,) in Series.objects.values_list("node")} == {"muc-l4-1"}
    assert latest_node_state("muc-l4-1").queue_depth == 4  # type: ignore[union-attr]
    assert not TelemetryBatch.objects.exists()


def test_remote_write_for_no_known_node_is_answered_202_and_stores_nothing(
    fleet: Any, push: Any
) -> None:
    """Prometheus drops a batch answered 4xx and retries 5xx; a batch of only its own series
    is neither an error to log nor worth retrying, so it is accepted and skipped."""
    before = _skipped()
    body = encode_write_request(
        [({"__name__": "up", "instance": "localhost:9090"}, [(1.0, _now_ms())])]
    )
    response = push("remote-write", body, "application/x-protobuf")
    assert response.status_code == 202, response.content
    assert response.json() == {
        "batch_id": None,
        "samples": 0,
        "values": 0,
        "skipped_series": 1,
        "unknown_nodes": ["localhost:9090"],
    }
    assert _skipped() == before + 1
    assert not TelemetryBatch.objects.exists() and not Series.objects.exists()


def test_remote_write_registers_unknown_instances_when_configured(
    fleet: Any, push: Any, settings: Any
) -> None:
    settings.LOCUS_TELEMETRY_REGISTER_UNKNOWN_NODES = True
    settings.LOCUS_TELEMETRY_REGISTER_SITE = "muc-edge"
    settings.LOCUS_TELEMETRY_REGISTER_ACCELERATOR = "l4"
    now = _now_ms()
    body = encode_write_request(
        [
            ({"__name__": "queue_depth", "instance": "new-1"}, [(2.0, now)]),
            ({"__name__": "job:up:sum", "job": "x"}, [(1.0, now)]),  # no node to register
        ]
    )
    response = push("remote-write", body, "application/x-protobuf")
    assert response.status_code == 202, response.content
    assert response.json()["skipped_series"] == 1
    assert Node.objects.get(name="new-1").state == "cordoned"
    assert list(Series.objects.values_list("node", "metric")) == [("new-1", "queue_depth")]


def test_remote_write_still_refuses_a_series_without_a_name(fleet: Any, push: Any) -> None:
    body = encode_write_request([({"instance": "muc-l4-1"}, [(1.0, _now_ms())])])
    response = push("remote-write", body, "application/x-protobuf")
    assert response.status_code == 400
    assert response.json()["errors"]["timeseries"] == {"0": {"labels": ["needs a __name__ label"]}}
    assert not TelemetryBatch.objects.exists()


def test_the_worker_skips_samples_outside_the_window_instead_of_failing_the_batch(
    fleet: Any,
) -> None:
    """A remote-write batch in the inbox from before times were checked (or accepted under a
    wider window): the samples inside are stored, the one outside skipped, the batch done."""
    body = encode_write_request(
        [
            ({"__name__": "queue_depth", "instance": "muc-l4-1"}, [(2.0, _now_ms())]),
            ({"__name__": "foo", "instance": "muc-l4-1"}, [(1.0, 2**62)]),
        ]
    )
    now = datetime.now(UTC)
    batch = TelemetryBatch.objects.create(
        kind="remote_write", node="", payload=body, received_at=now, enqueued_at=now
    )
    result = batch_process(batch_id=batch.pk)
    assert result is not None and result.stored == 1
    assert not TelemetryBatch.objects.exists()
    assert list(Series.objects.values_list("metric", flat=True)) == ["queue_depth"]
