"""Ingest, the accepting side: take a batch durably, then let a worker process it
(`ingest.py`).

`batch_accept` validates the whole body (a malformed batch is refused whole, naming the bad
samples), checks every node against the inventory, stores the raw body in one INSERT and
enqueues its processing after commit: once it returns, the batch survives any crash. A
remote-write body may carry series of nodes the inventory does not know (Prometheus sends
everything it scrapes, its own `up` included): those series are skipped and counted, the rest
stored. `batch_redeliver_stale` enqueues again what a lost message or a killed worker left.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial

from django.db import transaction
from django.utils import timezone

from console.api.errors import ApplicationError
from telemetry import conf
from telemetry.breaches import outcome_record as outcome_record
from telemetry.ingest import MAX_ATTEMPTS, decode_batch, ingest_batch
from telemetry.metrics import SERIES_SKIPPED
from telemetry.models import BatchKind, TelemetryBatch
from telemetry.nodes import node_register_unknown, refuse_unknown, resolve_nodes
from telemetry.parsing import BatchInvalid

logger = logging.getLogger(__name__)


# How many unknown node names an answer lists.
_NAMED_UNKNOWN = 10


@dataclass(frozen=True)
class AcceptedBatch:
    batch_id: int | None  # None when nothing in the request was for a known node
    samples: int
    values: int
    skipped_series: int = 0
    unknown_nodes: list[str] = field(default_factory=list)  # the first few skipped


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
        # retries nor counts failed samples for series never meant for Locus (docs/telemetry.md).
        return AcceptedBatch(None, samples, values, skipped_series, names)
    with transaction.atomic():
        batch = TelemetryBatch.objects.create(
            kind=kind, node=node, payload=body, received_at=now, enqueued_at=now
        )
        transaction.on_commit(partial(_enqueue, batch.pk))
    return AcceptedBatch(batch.pk, samples, values, skipped_series, names)


def _enqueue(batch_id: int) -> None:
    try:
        ingest_batch.delay(batch_id)
    except Exception:  # the batch is stored; the redelivery beat task will enqueue it
        logger.warning("could not enqueue telemetry batch %s", batch_id, exc_info=True)


def batch_redeliver_stale(*, older_than_s: float | None = None) -> int:
    """Re-enqueue inbox batches not processed in time (lost message, killed worker)."""
    age = conf.inbox_redeliver_seconds() if older_than_s is None else older_than_s
    cutoff = timezone.now() - timedelta(seconds=age)
    ids = list(
        TelemetryBatch.objects.filter(enqueued_at__lte=cutoff, attempts__lt=MAX_ATTEMPTS)
        .order_by("pk")
        .values_list("pk", flat=True)[:1000]
    )
    TelemetryBatch.objects.filter(pk__in=ids).update(enqueued_at=timezone.now())
    for batch_id in ids:
        _enqueue(batch_id)
    return len(ids)
