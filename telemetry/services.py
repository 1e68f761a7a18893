"""Ingest: accept a batch durably, then process it exactly once.

`batch_accept` validates the whole body (a malformed batch is refused whole, naming the bad
samples), checks every node against the inventory, stores the raw body in one INSERT and
enqueues its processing after commit: once it returns, the batch survives any crash. A
remote-write body may carry series of nodes the inventory does not know (Prometheus sends
everything it scrapes, its own `up` included): those series are skipped and counted, the rest
stored.
`batch_process` parses, maps and derives, resolves series, then in one transaction locks the
inbox row, COPYs the readings and deletes the row. A redelivered task finds no row and does
nothing; a worker killed mid-COPY leaves the row (and no readings) for the next delivery.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial

from django.db import DataError, IntegrityError, transaction
from django.utils import timezone

from console.api.errors import ApplicationError
from telemetry import conf, state
from telemetry.breaches import outcome_record as outcome_record
from telemetry.freshness import freshness_note_ingest
from telemetry.mapping import map_scrape
from telemetry.mapping.derive import Prev, derive
from telemetry.metrics import SAMPLES_REFUSED, SERIES_SKIPPED
from telemetry.models import BatchKind, TelemetryBatch
from telemetry.node_latency import node_latency_record
from telemetry.nodes import node_register_unknown, refuse_unknown, resolve_nodes
from telemetry.parsing import BatchInvalid, Scrape, SeriesKey, TimeWindow, parse_json_samples
from telemetry.parsing import parse_prometheus_text as _parse_text
from telemetry.remote_write import parse_remote_write
from telemetry.storage import SeriesRef, resolve_series, write_readings
from telemetry.store import StoreError

logger = logging.getLogger(__name__)
_MAX_ATTEMPTS = 5


# How many unknown node names an answer lists.
_NAMED_UNKNOWN = 10


@dataclass(frozen=True)
class AcceptedBatch:
    batch_id: int | None  # None when nothing in the request was for a known node
    samples: int
    values: int
    skipped_series: int = 0
    unknown_nodes: list[str] = field(default_factory=list)  # the first few skipped


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


def batch_accept(*, kind: str, body: bytes, node: str = "") -> AcceptedBatch:
    """Validate a pushed body and store it durably; its processing is enqueued after commit."""
    if kind == BatchKind.PROMETHEUS and not node:
        raise ApplicationError(
            "Name the node: ?node=NAME.", errors={"node": ["This parameter is required."]}
        )
    now = timezone.now()
    try:
        scrapes = decode_batch(kind=kind, body=body, node=node, received_at=now, build=False)
    except BatchInvalid as exc:
        raise ApplicationError(exc.message, errors=exc.errors, status_code=exc.status) from None
    unknown = resolve_nodes(scrapes)
    skipped_series, skipped_names = 0, list[str]()
    if unknown and kind == BatchKind.REMOTE_WRITE:
        # Prometheus sends every series it has (its own `up`, recording rules, other jobs'
        # targets) and drops a batch answered 4xx: skip what is not for a known node, store
        # the rest, and say what was skipped. "" is a series without an instance/node label,
        # which even LOCUS_TELEMETRY_REGISTER_UNKNOWN_NODES cannot register.
        skip = unknown if not conf.register_unknown_nodes() else unknown & {""}
        if skip:
            skipped = [s for s in scrapes if s.node in skip]
            scrapes = [s for s in scrapes if s.node not in skip]
            skipped_series = len({(s.node, key) for s in skipped for key in s.values})
            SERIES_SKIPPED.labels(kind=kind).inc(skipped_series)
            skipped_names = sorted(n or "(no instance or node label)" for n in skip)
            unknown -= skip
    if unknown:
        if not conf.register_unknown_nodes():
            refuse_unknown(kind, scrapes, unknown)
        node_register_unknown(names=unknown)
    samples, values = len(scrapes), sum(s.size or len(s.values) for s in scrapes)
    names = skipped_names[:_NAMED_UNKNOWN]
    if not scrapes:
        # Nothing for a known node, so nothing to store; still 2xx, so Prometheus neither
        # retries nor counts failed samples for series never meant for Locus (README).
        return AcceptedBatch(None, samples, values, skipped_series, names)
    with transaction.atomic():
        batch = TelemetryBatch.objects.create(
            kind=kind, node=node, payload=body, received_at=now, enqueued_at=now
        )
        transaction.on_commit(partial(_enqueue, batch.pk))
    return AcceptedBatch(batch.pk, samples, values, skipped_series, names)


def _enqueue(batch_id: int) -> None:
    from telemetry.tasks import ingest_batch

    try:
        ingest_batch.delay(batch_id)
    except Exception:  # the batch is stored; the redelivery beat task will enqueue it
        logger.warning("could not enqueue telemetry batch %s", batch_id, exc_info=True)


def batch_redeliver_stale(*, older_than_s: float | None = None) -> int:
    """Re-enqueue inbox batches not processed in time (lost message, killed worker)."""
    age = conf.inbox_redeliver_seconds() if older_than_s is None else older_than_s
    cutoff = timezone.now() - timedelta(seconds=age)
    ids = list(
        TelemetryBatch.objects.filter(enqueued_at__lte=cutoff, attempts__lt=_MAX_ATTEMPTS)
        .order_by("pk")
        .values_list("pk", flat=True)[:1000]
    )
    TelemetryBatch.objects.filter(pk__in=ids).update(enqueued_at=timezone.now())
    for batch_id in ids:
        _enqueue(batch_id)
    return len(ids)


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
    """Fresh state, counter history, freshness and node latency (best effort, after commit)."""
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
