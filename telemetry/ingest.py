"""Ingest, the processing side: a worker stores one accepted batch exactly once
(`services.batch_accept` stored it and enqueued `ingest_batch`).

`batch_process` parses, maps and derives, resolves series, then in one transaction locks the
inbox row, COPYs the readings and deletes the row. A redelivered task finds no row and does
nothing; a worker killed mid-COPY leaves the row (and no readings) for the next delivery.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import shared_task
from django.db import DataError, IntegrityError, transaction

from telemetry import conf, state
from telemetry.freshness import freshness_note_ingest
from telemetry.mapping import map_scrape
from telemetry.mapping.derive import Prev, derive
from telemetry.metrics import SAMPLES_REFUSED
from telemetry.models import BatchKind, TelemetryBatch
from telemetry.node_latency import node_latency_record
from telemetry.nodes import resolve_nodes
from telemetry.parsing import BatchInvalid, Scrape, SeriesKey, TimeWindow, parse_json_samples
from telemetry.parsing import parse_prometheus_text as _parse_text
from telemetry.remote_write import parse_remote_write
from telemetry.storage import SeriesRef, resolve_series, write_readings
from telemetry.store import StoreError

logger = logging.getLogger(__name__)
# Failed attempts after which a batch stays in the inbox for an operator.
MAX_ATTEMPTS = 5


@shared_task(name="telemetry.ingest_batch")
def ingest_batch(batch_id: int) -> dict[str, Any] | None:
    """Process one inbox batch (idempotent: a redelivery finds it gone and does nothing).
    Declared here, not in tasks.py: the scrape and redelivery tasks enqueue it, through
    `services`, so it sits below them."""
    result = batch_ingest(batch_id=batch_id)
    return (
        None
        if result is None
        else {
            "stored": result.stored,
            "refused": result.refused,
            "unmapped": result.unmapped,
            "dropped": dict(result.dropped),
        }
    )


@dataclass
class IngestResult:
    """What processing one batch stored and dropped."""

    stored: int = 0
    refused: int = 0  # values whose series the database refused (dropped)
    unmapped: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    nodes: list[str] = field(default_factory=list)


def accepted_window(received_at: datetime) -> TimeWindow:
    """The sample times every ingest path accepts for a batch received at `received_at`."""
    return TimeWindow(
        reference=received_at,
        oldest=timedelta(days=conf.retention_days()),
        future_s=conf.max_future_seconds(),
    )


def decode_batch(
    *, kind: str, body: bytes, node: str, received_at: datetime, build: bool = True
) -> list[Scrape]:
    """Parse a body of any ingest kind (raises BatchInvalid).

    build=False validates strictly (the API refuses a batch with any bad sample); build=True
    is the worker, which skips a bad sample rather than fail a batch the API accepted.
    """
    window = accepted_window(received_at)
    strict = not build
    if kind == BatchKind.JSON:
        return parse_json_samples(body, window=window, build=build, strict=strict)
    if kind == BatchKind.PROMETHEUS:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise BatchInvalid("The body is not UTF-8 text.", {"body": ["not UTF-8"]}) from None
        return _parse_text(text, node=node, window=window, strict=strict)
    return parse_remote_write(
        body, window=window, strict=strict, max_decompressed=conf.max_decompressed_bytes()
    )


def batch_ingest(*, batch_id: int) -> IngestResult | None:
    """Process one batch; a failure counts an attempt against it and is raised (the task
    fails, and redelivery tries again until MAX_ATTEMPTS)."""
    try:
        return batch_process(batch_id=batch_id)
    except Exception as exc:
        batch_mark_failed(batch_id=batch_id, error=repr(exc))
        raise


def batch_mark_failed(*, batch_id: int, error: str) -> None:
    """Count a failed attempt; after a few the batch stays in the inbox for an operator."""
    batch = TelemetryBatch.objects.filter(pk=batch_id).first()
    if batch is not None:
        batch.attempts += 1
        batch.last_error = error[:2000]
        batch.save(update_fields=["attempts", "last_error"])


def _load_prev(nodes: list[str]) -> dict[str, Prev]:
    try:
        return state.load_prev(nodes)
    except StoreError:
        state.store_outage.failed("rates restart")
        return {n: {} for n in nodes}


def batch_process(*, batch_id: int) -> IngestResult | None:
    """Store one inbox batch exactly once; None when it was already processed."""
    batch = TelemetryBatch.objects.filter(pk=batch_id).first()
    if batch is None:
        return None
    scrapes = decode_batch(
        kind=batch.kind, body=bytes(batch.payload), node=batch.node, received_at=batch.received_at
    )
    unknown = resolve_nodes(scrapes)
    if unknown:  # remote-write series skipped on accept (or a node deleted since)
        scrapes = [s for s in scrapes if s.node not in unknown]
    scrapes.sort(key=lambda s: s.ts)
    nodes = sorted({s.node for s in scrapes})
    before = _load_prev(nodes)
    prev = {n: dict(p) for n, p in before.items()}
    result = IngestResult(nodes=nodes)
    pending: list[tuple[SeriesRef, datetime, float]] = []
    latest: dict[str, dict[str, tuple[float, float]]] = {n: {} for n in nodes}
    latencies: list[tuple[str, datetime, list[tuple[str, str, float, float, float]]]] = []
    for scrape in scrapes:
        mapped = map_scrape(scrape)
        epoch = scrape.ts.timestamp()
        derived = derive(mapped.observation, epoch, prev[scrape.node])
        node, ts = scrape.node, scrape.ts
        kept: dict[SeriesKey, float] = mapped.kept
        pending.extend([((node, name, labels), ts, v) for (name, labels), v in kept.items()])
        node_latest = latest[node]
        node_latest["_seen"] = (1.0, epoch)  # freshness counts any report, mapped or not
        for name, value in derived.fields.items():
            node_latest[name] = (value, epoch)
            if (name, ()) not in kept:
                pending.append(((node, name, ()), ts, value))
        if derived.latencies:
            latencies.append((node, ts, derived.latencies))
        result.unmapped += mapped.unmapped
        result.dropped.update(mapped.observation.dropped)
    ids = _resolve_isolating({ref for ref, _, _ in pending})
    rows = [(ids[ref], ts, v) for ref, ts, v in pending if ref in ids]
    if len(rows) < len(pending):
        SAMPLES_REFUSED.inc(len(pending) - len(rows))
        result.refused = len(pending) - len(rows)
    with transaction.atomic():
        locked = TelemetryBatch.objects.select_for_update().filter(pk=batch_id).first()
        if locked is None:
            return None  # another delivery of the same batch got here first
        write_readings(rows)
        locked.delete()
    result.stored = len(rows)
    _after_ingest(latest, prev, before, latencies)
    return result


def _resolve_isolating(refs: set[SeriesRef]) -> dict[SeriesRef, int]:
    """Series ids for `refs`; a series the database refuses (a name longer than its column,
    say) is left out and logged, so it cannot take the batch's other series down with it.
    A connection failure is raised: the whole batch is retried later."""
    try:
        with transaction.atomic():
            return resolve_series(refs)
    except (DataError, IntegrityError):
        pass
    ids: dict[SeriesRef, int] = {}
    for ref in sorted(refs, key=repr):
        try:
            with transaction.atomic():
                ids.update(resolve_series([ref]))
        except (DataError, IntegrityError) as exc:
            shown = repr(ref)[:300]
            logger.warning("telemetry series refused by the database, dropped: %s: %s", shown, exc)
    return ids


def _after_ingest(
    latest: dict[str, dict[str, tuple[float, float]]],
    prev: dict[str, Prev],
    before: dict[str, Prev],
    latencies: list[tuple[str, datetime, list[tuple[str, str, float, float, float]]]],
) -> None:
    """Fresh state, counter history, freshness and SLO windows (best effort, after commit)."""
    try:
        state.write_many(latest, prev, before)
        newest = {
            n: datetime.fromtimestamp(max(t for _, t in f.values()), tz=UTC)
            for n, f in latest.items()
            if f
        }
        freshness_note_ingest(newest=newest)
        for node, ts, items in latencies:
            node_latency_record(node=node, at=ts, slices=items)
    except StoreError:
        state.store_outage.failed("fresh state not updated")
