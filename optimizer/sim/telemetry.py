"""Telemetry as the live engine gets it, for the simulator's policies (`--telemetry-interval`).

The console's engine decides on the latest telemetry of each node plus its own accounting of
the requests it sent since (`optimizer.decide.state.live.LiveState`). With a `TelemetryModel` the
simulator feeds the same class the same way, so a policy decides on what a canary would see:

- Scrapes: the whole fleet is sampled every `interval_s` (Celery beat's scrape schedule,
  `LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS`, default 10 s), each period drawn uniformly within
  ±`jitter` of it (worker and exporter latency move the beat a little), the first one at a
  uniform phase within the first period. A sample holds the node's exact queue (waiting plus
  in flight), running sequences and KV use at the scrape instant, measured at that instant.
- Delivery: a scrape reaches the engine `ingest_s` later (scrape, ingest and the latest-state
  cache), plus the wait for the engine's next snapshot refresh, uniform in [0, `refresh_s`)
  (`LOCUS_SNAPSHOT_REFRESH_SECONDS`, default 1 s). Until then policies see the older sample.
- Between samples the engine counts its own sends as queued (LiveState), and its prefix index
  holds the prompts it sent, not the nodes' true caches; queued prompt tokens are unknown.
- Several deciders (`optimizer.sim.deciders`): the feed keeps one LiveState per decider
  (`views`), and every delivery reaches all of them at once.
- With the staleness filter on (`--stale-after`), a down node's exporter does not answer, so
  its last sample ages until a scrape after its recovery; without it every node is sampled,
  as before, so reports without the flag are unchanged.

Draws come from a generator seeded with `seed`, so a run is reproducible. Without a model the
simulator shows policies the exact state, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimizer.decide.state.fleet import D_KV_USED, D_QUEUE, D_RUNNING, S_KV_CAPACITY, Fleet
from optimizer.decide.state.live import LiveState, NodeSample

# Scrape to visibility in the latest-state cache: an HTTP scrape of an exporter and a write
# (tens of milliseconds each on the demo stack); the snapshot refresh wait comes on top.
DEFAULT_INGEST_S = 0.1
DEFAULT_REFRESH_S = 1.0
DEFAULT_JITTER = 0.05


@dataclass(frozen=True, slots=True)
class TelemetryModel:
    """How samples are taken and delivered (see the module docstring)."""

    interval_s: float
    ingest_s: float = DEFAULT_INGEST_S
    refresh_s: float = DEFAULT_REFRESH_S
    jitter: float = DEFAULT_JITTER
    seed: int = 0

    def __post_init__(self) -> None:
        if not (self.interval_s > 0 and np.isfinite(self.interval_s)):
            raise ValueError(f"telemetry interval must be a positive number, not {self.interval_s}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"telemetry jitter must be in [0, 1), not {self.jitter}")

    def start(self, fleet: Fleet, views: int = 1) -> TelemetryFeed:
        """The running feed of one simulation of `fleet`, feeding `views` LiveStates."""
        return TelemetryFeed(self, fleet, views)


class TelemetryFeed:
    """One run's scrapes in flight and the LiveStates they feed (one per decider that keeps
    its own; `live` is the first, the only one of a single decider)."""

    def __init__(self, model: TelemetryModel, fleet: Fleet, views: int = 1) -> None:
        if views < 1:
            raise ValueError(f"a telemetry feed needs at least one view, not {views}")
        self.model = model
        self.views = [LiveState(fleet) for _ in range(views)]
        self.live = self.views[0]
        self._rng = np.random.default_rng(model.seed)
        self._capacity = fleet.static[0][:, S_KV_CAPACITY]
        self._pending: dict[int, tuple[float, np.ndarray, np.ndarray | None]] = {}
        self._next_batch = 0

    def first_scrape_s(self) -> float:
        return float(self._rng.uniform(0.0, self.model.interval_s))

    def next_interval_s(self) -> float:
        m = self.model
        return float(m.interval_s * (1.0 + self._rng.uniform(-m.jitter, m.jitter)))

    def delay_s(self) -> float:
        return float(self.model.ingest_s + self._rng.uniform(0.0, self.model.refresh_s))

    def take(self, dynamic: np.ndarray, now: float, answering: np.ndarray | None = None) -> int:
        """Sample the exact columns now; returns the id of the batch to `deliver` later.
        `answering`: which nodes' exporters answer (a down node's does not, so its last
        sample ages); None: every node's."""
        batch = self._next_batch
        self._next_batch += 1
        values = dynamic[:, [D_QUEUE, D_RUNNING, D_KV_USED]].copy()
        self._pending[batch] = (now, values, None if answering is None else answering.copy())
        return batch

    def deliver(self, batch: int) -> None:
        """The samples of scrape `batch` reach the engine."""
        measured_at, values, answering = self._pending.pop(batch)
        usage = values[:, 2] / self._capacity
        for i, (queue, running) in enumerate(values[:, :2].tolist()):
            if answering is None or answering[i]:
                sample = NodeSample(int(queue), int(running), float(usage[i]), measured_at)
                for view in self.views:
                    view.observe(i, sample)
