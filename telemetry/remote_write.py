"""Prometheus remote-write 1.0: snappy-compressed protobuf `WriteRequest` bodies.

The messages are declared here rather than compiled from .proto files: they are the subset of
prometheus/prompb `remote.proto` and `types.proto` (field numbers as upstream) that carries
float samples. Fields not declared (exemplars, native histograms) are skipped by the protobuf
runtime as unknown fields. Spec: https://prometheus.io/docs/specs/remote_write_spec/
(the body is snappy *block* format, not the framed format).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import cramjam
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from console.api.jsonbody import NUL_MESSAGE
from telemetry.metrics import SAMPLES_REFUSED
from telemetry.parsing import (
    MAX_NAMED,
    NO_LABELS,
    NODE_LABELS,
    BatchInvalid,
    Scrape,
    TimeWindow,
    series_text,
)

logger = logging.getLogger(__name__)
_F = descriptor_pb2.FieldDescriptorProto


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="locus_prompb.proto", package="locus.prompb", syntax="proto3"
    )

    def message(name: str, fields: list[tuple[str, int, int, int, str]]) -> None:
        msg = proto.message_type.add(name=name)
        for fname, number, ftype, label, type_name in fields:
            msg.field.add(
                name=fname, number=number, type=ftype, label=label, type_name=type_name or None
            )

    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    message("Label", [("name", 1, _F.TYPE_STRING, opt, ""), ("value", 2, _F.TYPE_STRING, opt, "")])
    message(
        "Sample", [("value", 1, _F.TYPE_DOUBLE, opt, ""), ("timestamp", 2, _F.TYPE_INT64, opt, "")]
    )
    message(
        "TimeSeries",
        [
            ("labels", 1, _F.TYPE_MESSAGE, rep, ".locus.prompb.Label"),
            ("samples", 2, _F.TYPE_MESSAGE, rep, ".locus.prompb.Sample"),
        ],
    )
    # MetricMetadata.type is an enum upstream; an int32 has the same wire encoding.
    message(
        "MetricMetadata",
        [
            ("type", 1, _F.TYPE_INT32, opt, ""),
            ("metric_family_name", 2, _F.TYPE_STRING, opt, ""),
            ("help", 4, _F.TYPE_STRING, opt, ""),
            ("unit", 5, _F.TYPE_STRING, opt, ""),
        ],
    )
    message(
        "WriteRequest",
        [
            ("timeseries", 1, _F.TYPE_MESSAGE, rep, ".locus.prompb.TimeSeries"),
            ("metadata", 3, _F.TYPE_MESSAGE, rep, ".locus.prompb.MetricMetadata"),
        ],
    )
    return proto


_pool = descriptor_pool.DescriptorPool()
_pool.Add(_file())
WriteRequest: Any = message_factory.GetMessageClass(
    _pool.FindMessageTypeByName("locus.prompb.WriteRequest")
)


def encode_write_request(series: list[tuple[dict[str, str], list[tuple[float, int]]]]) -> bytes:
    """A snappy-compressed WriteRequest from [(labels incl. __name__, [(value, ts_ms)])].

    What Prometheus sends; used by tests and the benchmark.
    """
    request = WriteRequest()
    for labels, samples in series:
        ts = request.timeseries.add()
        for name in sorted(labels):
            ts.labels.add(name=name, value=labels[name])
        for value, stamp in samples:
            ts.samples.add(value=value, timestamp=stamp)
    return bytes(cramjam.snappy.compress_raw(request.SerializeToString()))


def uncompressed_length(body: bytes) -> int | None:
    """The length a snappy block says it decompresses to: its leading varint (snappy's
    format_description.txt: "the uncompressed length, stored as a little-endian varint", at
    most 2^32 - 1, so five bytes). None when the header is malformed."""
    length = 0
    for index, byte in enumerate(body[:5]):
        length |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return length
    return None


def decompress(body: bytes, *, limit: int) -> bytes:
    """The WriteRequest bytes of a remote-write body, refusing (413) one that says it
    decompresses to more than `limit` bytes before decompressing anything. The header is a
    hard cap: a block whose data decompresses to another length than its header says is
    refused by the decoder (the snap crate behind cramjam checks it)."""
    length = uncompressed_length(body)
    if length is not None and length > limit:
        raise BatchInvalid(
            f"The body decompresses to {length} bytes, more than the {limit} accepted; "
            "send smaller batches (Prometheus: lower queue_config.max_samples_per_send).",
            {"body": [f"decompressed size {length} > {limit} bytes"]},
            status=413,
        )
    try:
        return bytes(cramjam.snappy.decompress_raw(body))
    except Exception as exc:  # cramjam raises its own DecompressionError
        raise BatchInvalid(
            "The body is not snappy-compressed (remote-write 1.0 uses snappy block format).",
            {"body": [str(exc)]},
        ) from None


def parse_remote_write(
    body: bytes, *, window: TimeWindow, strict: bool = True, max_decompressed: int
) -> list[Scrape]:
    """Scrapes (one per node and timestamp) from a remote-write body.

    The node is the `node` label if present, else `instance` (an `host:port` instance names
    the node by its host part when that is how the node is known; see services). A series
    with neither (a recording rule's, say) gets node "": no node is known by that name, so
    services skips it like any series of an unknown node. Every sample time must lie inside
    `window`; strict=False (the worker) skips the samples outside instead of refusing.
    """
    raw = decompress(body, limit=max_decompressed)
    request = WriteRequest()
    try:
        request.ParseFromString(raw)
    except Exception as exc:  # protobuf's DecodeError
        raise BatchInvalid(
            "The body is not a remote-write WriteRequest.", {"body": [str(exc)]}
        ) from None
    scrapes: dict[tuple[str, int], Scrape] = {}
    errors: dict[str, dict[str, list[str]]] = {}
    late: dict[str, dict[str, list[str]]] = {}  # the first few series refused, for the answer
    refused = 0
    for index, series in enumerate(request.timeseries):
        labels = {label.name: label.value for label in series.labels}
        name = labels.pop("__name__", "")
        if not name:
            errors[str(index)] = {"labels": ["needs a __name__ label"]}
            continue
        if any("\x00" in text for label in series.labels for text in (label.name, label.value)):
            # No database text column stores U+0000 (docs/hardening.md).
            shown = series_text(name, labels).replace("\x00", "\\u0000")
            errors[str(index)] = {"labels": [f"{shown}: {NUL_MESSAGE}"]}
            continue
        node = labels.get("node") or labels.get("instance") or ""
        rest = {k: v for k, v in labels.items() if k not in NODE_LABELS}
        key = (name, tuple(sorted(rest.items())) if rest else NO_LABELS)
        for sample in series.samples:
            scrape = scrapes.get((node, sample.timestamp))
            if scrape is None:
                problem = window.epoch_problem(sample.timestamp / 1000.0)
                if problem:
                    refused += 1
                    if len(late) < MAX_NAMED and str(index) not in late:
                        late[str(index)] = {
                            "samples": [
                                f"{series_text(name, labels)}: timestamp {sample.timestamp} ms "
                                f"{problem}"
                            ]
                        }
                    continue
                when = datetime.fromtimestamp(sample.timestamp / 1000.0, tz=UTC)
                scrape = scrapes[(node, sample.timestamp)] = Scrape(node=node, ts=when)
            scrape.values[key] = sample.value
    if errors and strict:
        raise BatchInvalid(
            f"{len(errors)} time series are invalid; nothing was stored.", {"timeseries": errors}
        )
    if errors:
        logger.warning("skipping invalid series of an accepted batch: %s", errors)
        SAMPLES_REFUSED.inc(sum(len(request.timeseries[int(i)].samples) for i in errors))
    if refused:
        first = next(iter(late.values()))["samples"][0]
        message = (
            f"{refused} samples have timestamps outside the accepted window "
            f"(first: {first}); nothing was stored."
        )
        if strict:
            raise BatchInvalid(message, {"timeseries": late})
        logger.warning("skipping samples of an accepted batch: %s", message)
    if not scrapes and strict:
        raise BatchInvalid("The request is invalid.", {"timeseries": ["No samples."]})
    return list(scrapes.values())
