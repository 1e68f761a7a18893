"""The breakers filter: per-node circuit breakers fed by request outcomes.

States: closed (traffic flows) → open (node rejected with 'breaker_open') → half-open (a few
probe requests go through) → closed after enough probe successes, or open again on a probe
failure. A breaker trips on `consecutive_failures` failures in a row, or when at least
`min_requests` outcomes within `window_s` show an error rate of `error_rate` or more.

Defaults follow SGLang's router (trip after 10 failures within 120 s, stay open 60 s, close
after 3 successes; sgl-router `CircuitBreakerConfig`), with a lower consecutive threshold
(5) because a run of failures on one inference node is rarely noise.

The console's runtime feeds the board with reported outcomes; the simulator, when run with
breakers, with its own (a request served or lost, a prompt sent to a node that went down),
on its own clock. `BreakerFilter` is the GIE EPP filter plugin over a board.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from optimizer.decide.framework import Trip

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"
REASON_BREAKER = "breaker_open"


@dataclass(frozen=True)
class BreakerConfig:
    """Every knob with its default; settings `LOCUS_BREAKER_*` override them."""

    consecutive_failures: int = 5
    window_s: float = 120.0
    error_rate: float = 0.5
    min_requests: int = 10
    open_s: float = 60.0
    half_open_probes: int = 3
    close_after_successes: int = 3


@dataclass
class _Breaker:
    state: str = CLOSED
    consecutive: int = 0
    opened_at: float = 0.0
    probes_in_flight: int = 0
    probe_successes: int = 0
    outcomes: deque[tuple[float, bool]] = field(default_factory=deque)


Transition = Callable[[str, str, str, str], None]  # node, from, to, why


class BreakerBoard:
    """The breakers of every node, thread-safe, with a callback on each state change."""

    def __init__(
        self,
        config: BreakerConfig,
        on_transition: Transition | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._clock = clock
        self._on_transition = on_transition
        self._breakers: dict[str, _Breaker] = {}
        self._not_closed: set[str] = set()
        self._lock = threading.Lock()

    def state(self, node: str) -> str:
        """The state a decision sees now (an open breaker past `open_s` reads half-open)."""
        b = self._breakers.get(node)
        if b is None:
            return CLOSED
        if b.state == OPEN and self._clock() - b.opened_at >= self.config.open_s:
            with self._lock:
                self._move(node, b, HALF_OPEN, f"open for {self.config.open_s:g}s")
        return b.state

    def allows(self, node: str) -> bool:
        """May a decision pick this node? Half-open admits a bounded number of probes."""
        state = self.state(node)
        if state == CLOSED:
            return True
        if state == OPEN:
            return False
        b = self._breakers[node]
        return b.probes_in_flight < self.config.half_open_probes

    def on_pick(self, node: str) -> None:
        """A decision picked `node`; in half-open state it is a probe."""
        b = self._breakers.get(node)
        if b is not None and b.state == HALF_OPEN:
            with self._lock:
                b.probes_in_flight += 1

    def record(self, node: str, ok: bool) -> None:
        """An outcome of a request served by `node`."""
        now = self._clock()
        with self._lock:
            b = self._breakers.setdefault(node, _Breaker())
            b.outcomes.append((now, ok))
            while b.outcomes and now - b.outcomes[0][0] > self.config.window_s:
                b.outcomes.popleft()
            if b.state == HALF_OPEN:
                b.probes_in_flight = max(0, b.probes_in_flight - 1)
                if not ok:
                    self._trip(node, b, now, "a probe failed")
                    return
                b.probe_successes += 1
                if b.probe_successes >= self.config.close_after_successes:
                    self._move(node, b, CLOSED, f"{b.probe_successes} probes succeeded")
                return
            b.consecutive = 0 if ok else b.consecutive + 1
            if b.state != CLOSED:
                return
            if b.consecutive >= self.config.consecutive_failures:
                self._trip(node, b, now, f"{b.consecutive} consecutive failures")
                return
            n = len(b.outcomes)
            if n >= self.config.min_requests:
                rate = sum(1 for _, good in b.outcomes if not good) / n
                if rate >= self.config.error_rate:
                    self._trip(
                        node,
                        b,
                        now,
                        f"error rate {rate:.0%} over {n} requests in {self.config.window_s:g}s",
                    )

    def force_open(self, node: str, why: str) -> None:
        """Open a node's breaker because another process tripped it (shared state)."""
        with self._lock:
            b = self._breakers.setdefault(node, _Breaker())
            if b.state == CLOSED:
                self._trip(node, b, self._clock(), why)

    def not_closed(self) -> frozenset[str]:
        """Nodes whose breaker is open or half-open: the only ones `allows` may refuse, so a
        decision asks about these rather than about every candidate."""
        return frozenset(self._not_closed)

    def open_nodes(self) -> list[str]:
        return [n for n in list(self._breakers) if self.state(n) == OPEN]

    def snapshot(self) -> dict[str, str]:
        return {n: self.state(n) for n in list(self._breakers)}

    def _trip(self, node: str, b: _Breaker, now: float, why: str) -> None:
        b.opened_at = now
        b.outcomes.clear()
        self._move(node, b, OPEN, why)

    def _move(self, node: str, b: _Breaker, to: str, why: str) -> None:
        before = b.state
        b.state = to
        if to == CLOSED:
            self._not_closed.discard(node)
        else:
            self._not_closed.add(node)
        b.consecutive = 0
        b.probes_in_flight = 0
        b.probe_successes = 0
        if self._on_transition is not None and before != to:
            self._on_transition(node, before, to, why)


class BreakerFilter:
    """Leaves out the candidates whose breaker refuses traffic (open, or half-open with its
    probes in flight). Asks the board only about the nodes not closed: most decisions see a
    fleet with every breaker closed and pay one set lookup."""

    name = "breakers"

    def __init__(self, board: BreakerBoard) -> None:
        self.board = board

    def filter(self, trip: Trip) -> None:
        board = self.board
        blocked = board.not_closed()
        if not blocked:
            return
        names = trip.fleet.names
        index = trip.index
        keep = np.array(
            [names[i] not in blocked or board.allows(names[i]) for i in index.tolist()],
            dtype=bool,
        )
        trip.reject(index, keep, REASON_BREAKER)
