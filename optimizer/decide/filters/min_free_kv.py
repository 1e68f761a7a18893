"""The min-free-KV filter: leave out nodes whose KV cache is nearly full, while others remain.

A node with little free KV memory admits a new sequence only by queueing it behind the
sequences that must finish first (or, on vLLM, by preempting one), so its time to first token
jumps in a way a queue-length score sees late. The GIE EPP's first scheduler filtered the same
way (its `kvCacheThreshold`, 0.8 of the cache in use, in pkg/epp/scheduling/filter.go). Like
the stale-telemetry filter it never empties the candidates: when every node is that full,
placing somewhere beats refusing service. Not in the default pipelines; name it to use it
(docs/architecture.md, "How to add a filter or a scorer").
"""

from __future__ import annotations

from optimizer.decide.framework import Trip
from optimizer.decide.state.fleet import D_KV_USED, S_KV_CAPACITY

REASON_LOW_FREE_KV = "low_free_kv"


class MinFreeKvFilter:
    """Keeps the candidates with at least `min_free` (0..1) of their KV cache free."""

    name = "min-free-kv"

    def __init__(self, min_free: float = 0.2) -> None:
        if not 0.0 <= min_free <= 1.0:
            raise ValueError(f"min_free must be within 0..1, got {min_free!r}")
        self.min_free = min_free

    def filter(self, trip: Trip) -> None:
        index = trip.index
        fleet = trip.fleet
        capacity = fleet.static[fleet.model_index[trip.request.model]][index, S_KV_CAPACITY]
        free = 1.0 - trip.dynamic[index, D_KV_USED] / capacity
        keep = free >= self.min_free
        if keep.any() and not keep.all():
            trip.reject(index, keep, REASON_LOW_FREE_KV)
