"""Writes decision records, outcomes and stream events off the request thread, in batches.

Requests only append to an in-memory queue. A background thread drains it every
`flush_interval_s` (or sooner when `batch_size` items wait): one bulk INSERT for the new
records, then the outcome updates, in one transaction. When the database is down the items
stay buffered and are retried with backoff; past `max_buffer` the oldest are dropped from
memory and counted (`locus_decision_records_dropped_total`), so memory stays bounded (with a
journal they stay in it, and are read back once the database returns). A row the database
refuses never blocks the rows behind it (refusals.py). `stalled_s` tells /readyz when
records wait and nothing has been written for a while. `stop` drains the queue before it
returns (the ASGI lifespan's shutdown calls it, console/lifespan.py).

With a `journal` (console/placement/engine/journal.py) each item is also appended to this
process's journal segment before `record`/`outcome` return, under the lock that `flush` takes
to seal the segment and take the queue; once what was taken is committed, the sealed segments
are deleted. Segments left by a dead process are adopted at start and every
`adopt_interval_s`.

The live stream gets a bounded view of the decisions (`LiveSample`, livesample.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console.dbutil import release_connections
from console.outage import OutageLog
from console.placement.engine.journal import Journal
from console.placement.engine.livesample import LiveSample
from console.placement.engine.refusals import CONNECTION_ERRORS, RecorderStats, write_in_halves
from console.placement.metrics import (
    RECORDER_BACKLOG,
    RECORDER_OLDEST_SECONDS,
    RECORDS_DROPPED,
)

logger = logging.getLogger(__name__)
journal_outage = OutageLog("decision record journal", logger)
Item = dict[str, Any]


@dataclass
class Recorder:
    """The background writer. `write_batch` does the database work (injected for tests)."""

    write_batch: Callable[[list[dict[str, Any]], list[dict[str, Any]]], None]
    publish: Callable[[str, dict[str, Any]], None]
    flush_interval_s: float = 0.2
    batch_size: int = 1000
    max_buffer: int = 200_000
    live: LiveSample = field(default_factory=LiveSample)
    journal: Journal | None = None
    adopt_interval_s: float = 10.0
    stats: RecorderStats = field(default_factory=RecorderStats)

    def __post_init__(self) -> None:
        self._records: deque[dict[str, Any]] = deque()
        self._outcomes: deque[dict[str, Any]] = deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._later: deque[Callable[[], None]] = deque(maxlen=10_000)
        self.tick_hooks: list[Callable[[], None]] = []
        self._last_progress = time.monotonic()
        # Held by `record`/`outcome` around journal append + queue append, and by `flush`
        # around sealing the segment + taking the queue: a sealed segment's items are then
        # all in the batch taken (or written before), never still on their way to the queue.
        self._queue_lock = threading.Lock()
        self._dropped_journaled = False  # items dropped from memory that only the journal has
        self._adopted_at = 0.0

    # -- called on the request path: O(1); no I/O but the journal's one write(2) -----------
    def record(self, row: dict[str, Any], event: Callable[[], dict[str, Any]]) -> None:
        """Queue a record; `event` builds its stream event, called only when sampled."""
        self._queue("r", self._records, row)
        self.live.note(row, event)
        self._bound(self._records)
        if len(self._records) >= self.batch_size:
            self._wake.set()

    def outcome(self, update: dict[str, Any]) -> None:
        self._queue("o", self._outcomes, update)
        self._bound(self._outcomes)

    def _queue(self, kind: str, queue: deque[Item], item: Item) -> None:
        if self.journal is None:
            queue.append(item)
            return
        with self._queue_lock:
            try:
                self.journal.append(kind, item)  # on disk (the page cache) before we answer
            except OSError:
                # A full or failing disk must not fail the decision: the item is kept in
                # memory only, as without a journal.
                journal_outage.failed()
            else:
                journal_outage.recovered()
            queue.append(item)

    def later(self, work: Callable[[], None]) -> None:
        """Run `work` on the background thread (rare side effects: breaker audit, SLO
        windows); a failure is logged, never raised to the request that queued it."""
        self._later.append(work)

    def _bound(self, queue: deque[dict[str, Any]]) -> None:
        while len(queue) > self.max_buffer:
            queue.popleft()
            self.stats.dropped += 1
            if self.journal is None:
                RECORDS_DROPPED.inc()  # lost; with a journal it waits there (see `flush`)
            else:
                self._dropped_journaled = True

    # -- the background side ---------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop = False
            self.adopt()  # before serving: what a crashed predecessor left
            self._thread = threading.Thread(target=self._run, name="locus-recorder", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread once it has written what is queued (or `timeout` passed)."""
        self._stop = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.journal is not None:
            # Deleted only when all is written; otherwise left for the next start to adopt.
            writing = self._thread is not None and self._thread.is_alive()
            self.journal.close(delete=not writing and not self.backlog())

    def _run(self) -> None:
        backoff = self.flush_interval_s
        while not self._stop:
            self._wake.wait(backoff)
            self._wake.clear()
            try:
                if time.monotonic() - self._adopted_at >= self.adopt_interval_s:
                    self.adopt()
                ok = self.flush()
            except Exception:  # the writer thread must outlive any single failure
                logger.exception("decision recorder flush failed")
                ok = False
            backoff = self.flush_interval_s if ok else min(backoff * 2, 5.0)
        # Stopping (shutdown): write everything still queued, unless the database fails.
        while self.flush() and self.backlog():
            pass
        if self.backlog():
            logger.error("shutting down with %d decision records unwritten", self.backlog())

    def flush(self) -> bool:
        """Write what is buffered and publish due events; False if the database failed."""
        self.live.publish_due(self.publish)
        with self._queue_lock:
            records = [
                self._records.popleft()
                for _ in range(min(len(self._records), self.batch_size * 10))
            ]
            # An outcome updates its record's row: while records wait behind this batch, the
            # outcomes wait too, or one could reach the database before its record.
            outcomes = (
                [self._outcomes.popleft() for _ in range(len(self._outcomes))]
                if not self._records
                else []
            )
            sealed, dropped = 0, False
            if self.journal is not None and not self._records:
                # Everything journaled so far is in this batch or already written.
                sealed, dropped = self.journal.rotate(), self._dropped_journaled
                self._dropped_journaled = False
        if records or outcomes:
            try:
                self.write_batch(records, outcomes)
            except Exception as exc:
                if isinstance(exc, CONNECTION_ERRORS):
                    self._dropped_journaled |= dropped
                    return self._failed(exc, records, outcomes)
                if not self._write_isolating(records, outcomes):
                    self._dropped_journaled |= dropped
                    return False
            else:
                self.stats.written += len(records)
                self.stats.outcomes += len(outcomes)
        if sealed and self.journal is not None:
            # Written: the sealed segments go, unless items dropped from memory are only
            # there, and then they are left for `adopt` to read back.
            self.journal.release(sealed, keep=dropped)
        self._last_progress = time.monotonic()
        self._gauges()
        self._run_side_work()
        return True

    def _failed(self, exc: Exception, records: list[Item], outcomes: list[Item]) -> bool:
        """Put the unwritten items back in front, in order, for the next try."""
        self._records.extendleft(reversed(records))
        self._outcomes.extendleft(reversed(outcomes))
        self.stats.failures += 1
        self.stats.last_error = str(exc)
        logger.warning(
            "decision records not written yet (%s buffered): %s", len(self._records), exc
        )
        self._gauges()
        release_connections()
        return False

    def _write_isolating(self, records: list[Item], outcomes: list[Item]) -> bool:
        """Write a batch that failed without a connection error in halves, down to single
        rows: a row that fails alone is refused (logged, counted, dropped). Records go first,
        so an outcome never precedes its record. False (with the unwritten items put back)
        when the connection fails on the way."""
        write_records = lambda chunk: self.write_batch(chunk, [])  # noqa: E731
        unwritten = write_in_halves(records, write_records, "record", self.stats)
        if unwritten is not None:
            return self._failed(unwritten[1], unwritten[0], outcomes)
        write_outcomes = lambda chunk: self.write_batch([], chunk)  # noqa: E731
        unwritten = write_in_halves(outcomes, write_outcomes, "outcome", self.stats)
        if unwritten is not None:
            return self._failed(unwritten[1], [], unwritten[0])
        return True

    def adopt(self) -> int:
        """Queue the items of journal segments left by dead processes; how many."""
        self._adopted_at = time.monotonic()
        if self.journal is None:
            return 0
        return self.journal.adopt_orphans(self._take)

    def _take(self, lines: list[bytes], records: list[Item], outcomes: list[Item]) -> bool:
        """Queue an orphan segment's items whole (not bounded: dropping the oldest again
        would drop the same ones on every pass); True while there is room for another."""
        assert self.journal is not None
        with self._queue_lock:
            self.journal.write_lines(lines)
            self._records.extend(records)
            self._outcomes.extend(outcomes)
        self._wake.set()
        return self.backlog() < self.max_buffer

    def backlog(self) -> int:
        return len(self._records) + len(self._outcomes)

    def stalled_s(self) -> float:
        """Seconds since the recorder last made progress, while items wait (0 when none)."""
        if not self.backlog():
            return 0.0
        return time.monotonic() - self._last_progress

    def _gauges(self) -> None:
        RECORDER_BACKLOG.set(self.backlog())
        RECORDER_OLDEST_SECONDS.set(self.stalled_s())

    def _run_side_work(self) -> None:
        for hook in self.tick_hooks:
            self._safely(hook)
        while self._later:
            self._safely(self._later.popleft())

    @staticmethod
    def _safely(work: Callable[[], None]) -> None:
        try:
            work()
        except Exception:
            logger.warning("background work failed", exc_info=True)
