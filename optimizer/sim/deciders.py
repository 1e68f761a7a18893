"""Several deciders in one replay (`--deciders K`, `--shared-view`): issue #29's offline
measure of what active-active placement loses without a shared view of the fleet.

A live deployment runs several deciders at once (uvicorn workers, `run_picker --processes`,
router processes). Each keeps its own `LiveState` (`optimizer.decide.state.live`): the
requests it sent since the last scrape and the approximate prefix index of where its prompts
went. Every scrape reaches all of them, but each sees only its own sends, so between scrapes
it under-counts the load the others add and it never learns where their prompts went (the
herding and cache-affinity loss llm-d's operations guide documents for active-active).

The simulator models that with K views, all fed the same scrape deliveries (one
`TelemetryFeed`), and requests split among the deciders as a load balancer would:

- by session: a request whose trace line carries `session` (a conversation id) goes to
  decider `crc32(session) % K`, as sticky (consistent-hash) balancing keeps a session on one
  process. crc32, not Python's `hash`, which is salted per process (PYTHONHASHSEED);
- otherwise round-robin per request, in arrival order (the shipped traces carry no session,
  so their requests are split round-robin).

The split does not depend on the seed or the policy, so every policy sees the same split. A
request placed again (its node failed) is placed by the same decider.

With `shared_view` the K deciders read and write one `LiveState`: every send and prompt block
is seen by all at once. That is what a shared view (Redis, issue #29 item 2) gives minus its
publish and merge delay, which is not modelled, so a shared view replays exactly as one
decider does. What the deciders share either way: the policy object (weighted-score and the
trained policies keep no state between decisions; round-robin's counter and random's
generator would be one for all) and the breaker board (live processes share trips through
Redis). Without a telemetry model policies see the exact state, so K has no effect there and
the simulator refuses it.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BY_SESSION = "session"
ROUND_ROBIN = "round-robin"


@dataclass(frozen=True, slots=True)
class Deciders:
    """How many deciders place a replay's requests, which one places each, and whether they
    share one view (`view_of`)."""

    count: int
    shared_view: bool
    of: tuple[int, ...]  # the decider of each request, by request id
    split: str  # how requests were split: "session", "round-robin", or both as "session+..."

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"the number of deciders must be at least 1, not {self.count}")
        if any(not 0 <= d < self.count for d in self.of):
            raise ValueError(f"a request's decider must be in [0, {self.count})")

    @classmethod
    def split_of(
        cls, sessions: Sequence[str | None], count: int, *, shared_view: bool = False
    ) -> Deciders:
        """Split requests (each with its session id, or None) among `count` deciders."""
        if count < 1:
            raise ValueError(f"the number of deciders must be at least 1, not {count}")
        of: list[int] = []
        turn = 0
        kinds: set[str] = set()
        for session in sessions:
            if session is not None:
                of.append(zlib.crc32(session.encode("utf-8")) % count)
                kinds.add(BY_SESSION)
            else:
                of.append(turn % count)
                turn += 1
                kinds.add(ROUND_ROBIN)
        split = "+".join(k for k in (BY_SESSION, ROUND_ROBIN) if k in kinds) or ROUND_ROBIN
        return cls(count, shared_view, tuple(of), split)

    @property
    def views(self) -> int:
        """How many LiveStates the replay keeps: one when the view is shared."""
        return 1 if self.shared_view else self.count

    def view_of(self, rid: int) -> int:
        """The LiveState request `rid`'s decider reads and writes."""
        return 0 if self.shared_view else self.of[rid]

    def report(self) -> dict[str, Any]:
        """For a run's report."""
        return {"count": self.count, "shared_view": self.shared_view, "split": self.split}
