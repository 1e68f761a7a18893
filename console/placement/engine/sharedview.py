"""The shared live view's transport: this process's sends published to Redis, the other
deciders' read back and merged into its engine (issue #29; the model is
`optimizer.decide.state.shared`).

Off the hot path (docs/architecture.md rule 2). A decision only appends its send to an
in-memory queue (`publish`). Two background threads per process, each asleep while it has
nothing to do:

1. the publisher wakes on a queued send, waits `interval_s` (5 ms by default) for more, and
   writes them as one batch, one `XADD` on a Redis stream;
2. the reader blocks in `XREAD` until another decider adds a batch, skips its own, merges the
   rest into the engine under the engine's lock (`Engine.merge`), then pauses `interval_s` so
   the others' batches gather. (A blocking read returns at once when data comes; only its
   timeout is coarse: Redis checks blocked clients' timeouts in its cron, `hz` times a second,
   10 by default, redis.conf "hz", so a read is never used as a 5 ms clock.)

Both threads run under Linux's SCHED_BATCH policy (`_yield_to_deciders`): their wake-ups,
one per decision for the publisher, do not preempt the thread deciding, which on a busy host
otherwise waits behind every other runnable task for milliseconds (measured: the median
decision of 4 routers on 2 cores spent 1.5 ms in the run queue with the view on, none with it
off; tests/bench/bench_view_decide.py shows the same in one process).

A send is thus visible to the other deciders within about two intervals plus a round trip
(measured: tests/bench/bench_sharedview.py; docs/deploying.md). The stream is capped
(`MAXLEN ~`), so Redis memory stays bounded; a process that starts (or restarts after a
crash) first replays the stream's tail, so it warms from the others' recent sends instead of
placing as if the fleet were idle (the cold-start herding issue #29 names).

With Redis down the engine keeps deciding from its own view: sends wait in a bounded queue
and are dropped past it (the next scrape covers them anyway), `locus_shared_view_up` reads 0
and one log line says so (`OutageLog`); the threads retry every second and, once Redis
answers, resumes where it read last (the batches trimmed meanwhile are lost, which the next
scrape again makes up for).

How others do it: AIBrix's gateway counts running requests per pod in memory and writes its
request traces to Redis every 10 s (pkg/cache/cache_trace.go, `writeRequestTraceToStorage`),
and syncs its prefix index from the engines' KV events, not between gateway replicas; SGLang's
gateway mesh gossips cache-aware routing state between router replicas as insert operations
per worker (sgl-router/src/mesh/tree_ops.rs). This design shares both, sends and prompt
blocks, through the Redis the stack already runs, as operations.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

import redis

from console.outage import OutageLog
from console.placement.metrics import SHARED_VIEW_LAG, SHARED_VIEW_MERGED, SHARED_VIEW_UP
from optimizer.decide.state.shared import Send, decode, encode

logger = logging.getLogger(__name__)
# Sends waiting to be published, at most: with Redis down for a while the oldest are dropped
# (the node's next sample counts them for every decider anyway).
MAX_PENDING = 100_000
RETRY_S = 1.0


class SharedView:
    """One process's publisher and reader of the shared view. `apply(sends)` merges other
    deciders' sends into the engine; `start()` runs the background threads."""

    def __init__(
        self,
        *,
        url: str,
        apply: Callable[[list[Send]], int],
        stream: str = "locus:view:sends",
        interval_s: float = 0.005,
        maxlen: int = 20_000,
        warm_batches: int = 2_000,
    ) -> None:
        self.url = url
        self.stream = stream
        self.interval_s = interval_s
        self.maxlen = maxlen
        self.warm_batches = warm_batches
        self.origin = uuid.uuid4().hex[:12]  # this process, so it skips its own batches
        self._apply = apply
        self._pending: deque[Send] = deque(maxlen=MAX_PENDING)
        self._last_id: str | None = None  # None until warmed from the stream's tail
        self._stop = threading.Event()
        self._wake = threading.Event()  # set while sends wait to be published
        self._threads: list[threading.Thread] = []
        self.outage = OutageLog("shared live view (Redis)", logger)
        self.published = 0
        self.merged = 0

    def publish(self, send: Send) -> None:
        """Queue a send of this process (on the request thread: an append and a flag)."""
        self._pending.append(send)
        if not self._wake.is_set():
            self._wake.set()

    def start(self) -> SharedView:
        self._threads = [
            threading.Thread(target=loop, name=f"locus-shared-view-{name}", daemon=True)
            for name, loop in (("publish", self._publish_forever), ("read", self._read_forever))
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self, timeout: float = 1.0) -> None:
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout)

    @property
    def up(self) -> bool:
        return not self.outage.down

    # -- the background threads --------------------------------------------------------------
    # Two threads, each asleep while it has nothing to do, so an idle decider costs nothing
    # and a busy one is not woken 200 times a second for nothing: every wake-up of a Python
    # thread takes the GIL from the thread deciding (measured: polling Redis every 5 ms from
    # each of 4 processes on 2 cores halved the picker's throughput).
    def _publish_forever(self) -> None:
        _yield_to_deciders()
        client = self._client()
        while not self._stop.is_set():
            self._wake.wait()
            self._stop.wait(self.interval_s)  # the batch: what else comes meanwhile
            self._wake.clear()
            self._guarded(lambda: self.step(client, read=False))

    def _read_forever(self) -> None:
        _yield_to_deciders()
        client = self._client()
        while not self._stop.is_set():
            # A blocking read returns as soon as another decider adds a batch (only its
            # timeout is coarse, checked `hz` times a second); the pause after it lets the
            # others' batches gather, so a busy process merges at most every `interval_s`.
            if self._guarded(lambda: self.step(client, publish=False, block_ms=1000)):
                self._stop.wait(self.interval_s)

    def _client(self) -> Any:
        return redis.Redis.from_url(self.url, socket_timeout=3.0, socket_connect_timeout=1.0)

    def _guarded(self, work: Callable[[], None]) -> bool:
        """Run `work`; on a Redis failure say so once and wait before the next try."""
        try:
            work()
        except (redis.RedisError, OSError):
            self.outage.failed("deciding from this process's own view")
            SHARED_VIEW_UP.set(0)
            self._stop.wait(RETRY_S)
            return False
        if self.outage.down:
            self.outage.recovered()
        SHARED_VIEW_UP.set(1)
        return True

    def step(
        self, client: Any, *, publish: bool = True, read: bool = True, block_ms: int = 0
    ) -> None:
        """One round: warm first if not yet, then publish what waits and merge what came
        (the threads split the two; tests call it whole)."""
        if read and self._last_id is None:
            self._warm(client)
        sends = self._take() if publish else []
        pipe = client.pipeline(transaction=False)
        if sends:
            pipe.xadd(
                self.stream,
                {"o": self.origin, "s": encode(sends)},
                maxlen=self.maxlen,
                approximate=True,
            )
        if read:
            pipe.xread({self.stream: self._last_id}, count=1000, block=block_ms or None)
        if not len(pipe):
            return
        try:
            replies = pipe.execute()
        except BaseException:
            self._pending.extendleft(reversed(sends))  # published on the next round
            raise
        self.published += len(sends)
        if read:
            for _, entries in replies[-1] or []:
                self._merge(entries)

    def _take(self) -> list[Send]:
        pending = self._pending
        return [pending.popleft() for _ in range(len(pending))]

    def _warm(self, client: Any) -> None:
        """Replay the stream's recent batches, oldest first (a fresh process's first round)."""
        newest_first = client.xrevrange(self.stream, count=self.warm_batches)
        self._last_id = "0-0"
        self._merge(list(reversed(newest_first)))
        if newest_first:
            logger.info("shared live view: warmed from %d batches", len(newest_first))

    def _merge(self, entries: list[tuple[Any, dict[Any, Any]]]) -> None:
        sends: list[Send] = []
        for entry_id, fields in entries:
            self._last_id = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
            origin = fields.get(b"o", fields.get("o"))
            if origin in (self.origin, self.origin.encode()):
                continue
            try:
                sends.extend(decode(fields.get(b"s", fields.get("s", b""))))
            except ValueError:
                logger.debug("shared live view: skipped a malformed batch %s", self._last_id)
        if sends:
            self.merged += self._apply(sends)
            SHARED_VIEW_MERGED.inc(len(sends))
            SHARED_VIEW_LAG.observe(max(0.0, time.time() - sends[-1].at))


def _yield_to_deciders() -> None:
    """Run the calling thread under Linux's SCHED_BATCH policy, so its wake-ups never
    preempt the thread deciding.

    A decision wakes the publisher (`publish` sets its event) and another decider's batch
    wakes the reader at any moment. Under the default policy the woken thread preempts the
    running one (CFS wake-up preemption), the decision's thread goes back to the run queue
    behind every other runnable task of the host, and on a busy host waits there for
    milliseconds. Measured live (tests/bench/bench_live_deciders.py, 4 routers on 2 cores,
    per-decision run-queue time from /proc/thread-self/schedstat): the median decision
    waited 1.5 ms in the run queue with the view on and none with it off. A SCHED_BATCH
    thread is never a wake-up preemption's winner (kernel/sched/fair.c,
    `check_preempt_wakeup`: only SCHED_NORMAL wakees preempt); it runs when a core is free
    or the running task's slice ends, which delays a batch by at most a scheduler tick.
    Lowering one's own thread to SCHED_BATCH needs no privilege (sched(7)); elsewhere, or
    where refused, the thread keeps its policy."""
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):
        logger.debug("shared live view: SCHED_BATCH unavailable; threads keep their policy")
