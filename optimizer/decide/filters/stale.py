"""The stale-telemetry filter: nodes whose latest sample is older than `stale_after_s` are
left out, but only while fresh candidates remain: with every exporter silent, placing on old
data beats refusing service (docs/architecture.md rule 2). A node never sampled (NaN age) is
fresh: it has nothing stale to mislead with. Inert when the decision reads the exact state
(the simulator without `--telemetry-interval`): nothing there ages.
"""

from __future__ import annotations

from optimizer.decide.framework import Trip

REASON_STALE = "stale_telemetry"


class StaleTelemetryFilter:
    """Drops candidates with samples older than `stale_after_s` while fresh ones remain."""

    name = "stale-telemetry"

    def __init__(self, stale_after_s: float) -> None:
        if not stale_after_s >= 0:
            raise ValueError(f"stale_after_s must be 0 or more seconds, got {stale_after_s!r}")
        self.stale_after_s = stale_after_s

    def filter(self, trip: Trip) -> None:
        if trip.live is None:
            return
        index = trip.index
        stale = trip.live.age_s(index, trip.now) > self.stale_after_s  # NaN: fresh
        if stale.any() and not stale.all():
            trip.reject(index, ~stale, REASON_STALE)
