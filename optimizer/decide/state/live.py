"""What a live engine knows of its nodes, as columns: the one implementation the console's
engine runs and the simulator runs when it models telemetry (`--telemetry-interval`).

A live engine never sees a node's exact state. It has, per node, the last telemetry sample
(queue depth, running sequences, KV-cache usage, and when it was measured) plus its own
accounting since: every request it sent to the node after that measurement counts as queued
there, until a newer sample arrives (which then includes it, or its completion). Engines do
not export their prefix-cache contents, so the engine keeps an approximate prefix index of
the prompts it sent to each node, an LRU within the node's KV room, as llm-d's approximate
prefix-cache scorer does. Queued prompt tokens are not exported either, so that column stays
0 (the estimates then assume queued requests as long as the one being placed).

A split's decode half (issue #30) is not a queued prompt: it arrives prefilled and only takes
a batch slot. Pricing it as one more prompt to prefill made mixed nodes that took decode halves
look full for prefill (`optimizer.decide.state.estimates.queue_and_prefill` prices each queued
request as one like the one being placed), so they sat idle while the prefill nodes ran over
capacity. It counts as running instead, which the decode-side wait and the batch-overflow terms
read, as the simulator's node reports it in a sample (`optimizer.sim.occupancy`, `sync`).

`dynamic` is what policies read (`optimizer.decide.state.candidates.Candidates`): the sampled
columns with the requests sent since added to the queue, and the decode halves sent since to
the running sequences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from optimizer.decide.request import BLOCK_TOKENS
from optimizer.decide.state.fleet import (
    D_KV_USED,
    D_QUEUE,
    D_RUNNING,
    DYNAMIC_COLUMNS,
    S_KV_CAPACITY,
    Fleet,
)
from optimizer.decide.state.prefix import PrefixIndex


@dataclass(frozen=True, slots=True)
class NodeSample:
    """One node's telemetry as placement reads it, with when it was measured."""

    queue_depth: int
    running: int
    kv_usage: float  # fraction of KV capacity in use, 0..1
    measured_at: float  # seconds on the clock of whoever keeps the LiveState

    def age_s(self, now: float) -> float:
        return max(0.0, now - self.measured_at)


class LiveState:
    """The last sample per node plus the requests sent since, and the prefix index."""

    def __init__(self, fleet: Fleet, previous: LiveState | None = None) -> None:
        """A state for `fleet`; `previous` (a state of an earlier topology) hands over what
        it knew of the nodes that are still there, by name."""
        n = fleet.size
        self.fleet = fleet
        self._capacity = fleet.static[0][:, S_KV_CAPACITY]
        self.sampled = np.zeros((n, DYNAMIC_COLUMNS), dtype=np.float64)
        self.dynamic = np.zeros((n, DYNAMIC_COLUMNS), dtype=np.float64)
        self.measured_at = np.full(n, np.nan)
        self.sent_since = np.zeros(n, dtype=np.int64)
        # Decode halves of splits sent since the last sample: re-added to its running count.
        self.decode_since = np.zeros(n, dtype=np.int64)
        self.prefix = PrefixIndex(n)
        if previous is not None:
            for name, old in previous.fleet.index_of.items():
                i = fleet.index_of.get(name)
                if i is None:
                    continue
                self.sampled[i] = previous.sampled[old]
                self.dynamic[i] = previous.dynamic[old]
                self.measured_at[i] = previous.measured_at[old]
                self.sent_since[i] = previous.sent_since[old]
                self.decode_since[i] = previous.decode_since[old]
                cache = previous.prefix.caches[old]
                if cache is not None:
                    self.prefix.adopt(i, cache)

    def observe(self, node: int, sample: NodeSample) -> None:
        """A sample of `node` arrived. The requests counted as sent since the last sample
        restart from 0 only when this one was measured later (it may include them): prompts
        in its queue, decode halves among its running sequences."""
        if not sample.measured_at <= self.measured_at[node]:  # also when none is known (NaN)
            self.sent_since[node] = 0
            self.decode_since[node] = 0
            self.measured_at[node] = sample.measured_at
        row = self.sampled[node]
        row[D_QUEUE] = sample.queue_depth
        row[D_RUNNING] = sample.running
        row[D_KV_USED] = int(sample.kv_usage * self._capacity[node])
        self.dynamic[node] = row
        self.dynamic[node, D_QUEUE] += self.sent_since[node]
        self.dynamic[node, D_RUNNING] += self.decode_since[node]

    def observe_all(self, samples: Mapping[str, NodeSample]) -> None:
        """Samples by node name (names the fleet does not have are ignored)."""
        index_of = self.fleet.index_of
        for name, sample in samples.items():
            i = index_of.get(name)
            if i is not None:
                self.observe(i, sample)

    def sent(
        self, node: int, model: int, hashes: tuple[int, ...], *, decode_only: bool = False
    ) -> None:
        """This engine sent a request of `model` with prompt blocks `hashes` to `node`; with
        `decode_only`, a split's decode half (it counts as running, not queued: see above).
        Its prompt blocks join the node's cache either way (a decode half's KV arrives)."""
        self._count(node, decode_only)
        self._placed(node, model, hashes)

    def sent_by_peer(
        self,
        node: int,
        model: int,
        hashes: tuple[int, ...],
        at: float,
        *,
        decode_only: bool = False,
    ) -> None:
        """Another decider sent a request (`decode_only`: a split's decode half) to `node` at
        `at` (its clock, as `measured_at`'s): its prompt blocks join the node's prefix cache
        either way, and it counts as `sent` counts it only if the node's last sample was
        measured before it (a later one covers it)."""
        if not at <= self.measured_at[node]:  # also when no sample is known (NaN)
            self._count(node, decode_only)
        self._placed(node, model, hashes)

    def _count(self, node: int, decode_only: bool) -> None:
        if decode_only:
            self.decode_since[node] += 1
            self.dynamic[node, D_RUNNING] += 1
        else:
            self.sent_since[node] += 1
            self.dynamic[node, D_QUEUE] += 1

    def _placed(self, node: int, model: int, hashes: tuple[int, ...]) -> None:
        if hashes:
            self.prefix.cache_of(node).insert(
                model,
                hashes,
                BLOCK_TOKENS * self.fleet.kv_per_token[model],
                int(self._capacity[node]),
            )

    def age_s(self, index: np.ndarray, now: float) -> np.ndarray:
        """Age of each listed node's last sample (NaN where none is known)."""
        return np.maximum(now - self.measured_at[index], 0.0)
