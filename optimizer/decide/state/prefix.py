"""A node's prefix cache: the KV blocks of recent prompts, evicted least recently used.

Like vLLM's automatic prefix caching, blocks of finished prefills stay resident while memory
is free and are evicted LRU when sequences need the room. The blocks a running sequence reads
(its prompt's) are pinned: they are part of that sequence's KV and never evicted under it, and
they do not count against the cache's budget, which is the memory left beside the running
sequences (the simulator's node passes its KV capacity minus what running sequences reserve).
Blocks are keyed by (model, hash id) folded into one int, because the same hash under two
models is two different KV blocks.

`PrefixIndex` holds the caches of a whole fleet with an inverted index of which nodes hold
each block, so a decision matches a prompt only on the nodes holding its first block instead
of asking every candidate's cache.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

# Models per node are few; folding the model index into the low bits keeps keys plain ints.
_MODEL_BITS = 6
# Candidates up to which a match is assembled in Python rather than with numpy.
_SMALL = 64


def block_key(model_index: int, hash_id: int) -> int:
    """The cache key of one block of one model."""
    return (hash_id << _MODEL_BITS) | model_index


class PrefixCache:
    """LRU set of KV blocks with their sizes, within a byte budget set by its owner.

    With `holders` (a `PrefixIndex`'s), the cache records there, under its `owner` node
    index, every block it gains or loses."""

    __slots__ = ("_blocks", "_pins", "bytes", "pinned_bytes", "_holders", "_owner")

    def __init__(self, holders: dict[int, set[int]] | None = None, owner: int = -1) -> None:
        self._blocks: OrderedDict[int, int] = OrderedDict()
        self._pins: dict[int, int] = {}  # block -> running sequences reading it
        self.bytes = 0
        self.pinned_bytes = 0
        self._holders = holders
        self._owner = owner

    def _lost(self, key: int) -> None:
        holders = self._holders
        if holders is not None:
            nodes = holders[key]
            nodes.discard(self._owner)
            if not nodes:
                del holders[key]

    def __len__(self) -> int:
        return len(self._blocks)

    def match(self, model_index: int, hashes: tuple[int, ...]) -> int:
        """How many leading blocks of `hashes` are cached (without touching their recency)."""
        blocks = self._blocks
        count = 0
        for h in hashes:
            if ((h << _MODEL_BITS) | model_index) not in blocks:
                break
            count += 1
        return count

    def use(self, model_index: int, hashes: tuple[int, ...], count: int) -> None:
        """Mark the first `count` blocks as just used (a prefill read them)."""
        move = self._blocks.move_to_end
        for h in hashes[:count]:
            move((h << _MODEL_BITS) | model_index)

    def insert(
        self, model_index: int, hashes: tuple[int, ...], block_bytes: int, budget: int
    ) -> None:
        """Cache a prefilled prompt's blocks as most recent, then evict down to `budget`."""
        self.add(model_index, hashes, block_bytes)
        self.shrink(budget)

    def add(self, model_index: int, hashes: tuple[int, ...], block_bytes: int) -> None:
        """Cache a prefilled prompt's blocks as most recent (evicting nothing)."""
        blocks = self._blocks
        for h in hashes:
            key = (h << _MODEL_BITS) | model_index
            if key in blocks:
                blocks.move_to_end(key)
            else:
                blocks[key] = block_bytes
                self.bytes += block_bytes
                if self._holders is not None:
                    self._holders.setdefault(key, set()).add(self._owner)

    def pin(self, model_index: int, hashes: tuple[int, ...], start: int, stop: int) -> None:
        """A running sequence reads blocks `start:stop` of `hashes` (all cached)."""
        pins, blocks = self._pins, self._blocks
        for h in hashes[start:stop]:
            key = (h << _MODEL_BITS) | model_index
            count = pins.get(key, 0)
            if not count:
                self.pinned_bytes += blocks[key]
            pins[key] = count + 1

    def unpin(self, model_index: int, hashes: tuple[int, ...], stop: int) -> None:
        """The sequence that pinned blocks `:stop` of `hashes` finished."""
        pins, blocks = self._pins, self._blocks
        for h in hashes[:stop]:
            key = (h << _MODEL_BITS) | model_index
            count = pins[key] - 1
            if count:
                pins[key] = count
            else:
                del pins[key]
                self.pinned_bytes -= blocks[key]

    def shrink(self, budget: int) -> None:
        """Evict least recently used unpinned blocks until the unpinned ones fit in `budget`
        bytes (pinned blocks belong to running sequences, whose reservations hold them)."""
        blocks, pins = self._blocks, self._pins
        excess = self.bytes - self.pinned_bytes - budget
        if excess <= 0:
            return
        if not pins:
            while excess > 0 and blocks:
                key, size = blocks.popitem(last=False)
                self.bytes -= size
                excess -= size
                self._lost(key)
            return
        victims = []
        for key, size in blocks.items():  # oldest first
            if excess <= 0:
                break
            if key not in pins:
                victims.append(key)
                excess -= size
        for key in victims:
            self.bytes -= blocks.pop(key)
            self._lost(key)

    def clear(self) -> None:
        if self._holders is not None:
            for key in self._blocks:
                self._lost(key)
        self._blocks.clear()
        self._pins.clear()
        self.bytes = 0
        self.pinned_bytes = 0


class PrefixIndex:
    """The prefix caches of a fleet's nodes (None: nothing cached yet), optionally with an
    inverted index of which nodes hold each block.

    The index pays off where few nodes hold anything, as in a live engine's approximate
    index of what it sent: a match then asks only the holders of the prompt's first block.
    In the simulator every node caches and evicts all the time, and keeping the index costs
    more than looking the first block up in each candidate's cache, so it is left off there
    (`indexed=False`)."""

    __slots__ = ("caches", "holders")

    def __init__(self, size: int, *, indexed: bool = True) -> None:
        self.caches: list[PrefixCache | None] = [None] * size
        self.holders: dict[int, set[int]] | None = {} if indexed else None

    def cache_of(self, node: int) -> PrefixCache:
        """Node `node`'s cache, made (empty) on first use."""
        cache = self.caches[node]
        if cache is None:
            cache = self.caches[node] = PrefixCache(self.holders, node)
        return cache

    def adopt(self, node: int, cache: PrefixCache) -> None:
        """Take `cache` (another index's) as node `node`'s, its blocks registered here."""
        cache._holders, cache._owner = self.holders, node
        if self.holders is not None:
            for key in cache._blocks:
                self.holders.setdefault(key, set()).add(node)
        self.caches[node] = cache

    def match(self, index: np.ndarray, model_index: int, hashes: tuple[int, ...]) -> np.ndarray:
        """`PrefixCache.match` on the nodes in `index` (ascending), as float64; only the
        nodes holding the prompt's first block are asked."""
        return PrefixMatch(self, model_index, hashes).on(index)


class PrefixMatch:
    """One prompt's blocks matched on a `PrefixIndex`, for any node set of one decision: the
    split stage asks its prefill pool after the scorer asked the mixed candidates
    (`optimizer.decide.pickers.split`), and with an inverted index the walk of the block
    holders, most of a match's cost, is done once for both. Valid while the caches do not
    change (one decision)."""

    __slots__ = ("_prefix", "_model", "_hashes", "_nodes", "_counts", "_found", "_dense")

    def __init__(self, prefix: PrefixIndex, model_index: int, hashes: tuple[int, ...]) -> None:
        self._prefix = prefix
        self._model = model_index
        self._hashes = hashes
        self._nodes: list[int] | None = None  # the holders' walk, once made
        self._counts: list[int] = []
        self._found: dict[int, int] | None = None
        self._dense: np.ndarray | None = None

    def on(self, index: np.ndarray) -> np.ndarray:
        """Leading blocks of the prompt cached on each node of `index` (ascending), as
        float64."""
        out = np.zeros(len(index), dtype=np.float64)
        if not len(index):
            return out
        model_index, hashes = self._model, self._hashes
        if self._prefix.holders is None:
            first = (hashes[0] << _MODEL_BITS) | model_index
            caches = self._prefix.caches
            for j, node in enumerate(index.tolist()):
                cache = caches[node]
                if cache is not None and first in cache._blocks:
                    out[j] = cache.match(model_index, hashes)
            return out
        nodes = self._nodes
        if nodes is None:
            nodes = self._walk()
        if not nodes:
            return out
        if len(index) <= _SMALL:  # numpy's fixed costs exceed a short Python pass
            found = self._found
            if found is None:
                found = self._found = dict(zip(nodes, self._counts, strict=True))
            return np.array([found.get(i, 0) for i in index.tolist()], dtype=np.float64)
        dense = self._dense
        if dense is None:
            # Every node's count, once: each node set then takes its own in one gather
            # (a third of the cost of placing the holders in it by binary search).
            dense = self._dense = np.zeros(len(self._prefix.caches), dtype=np.float64)
            dense[nodes] = self._counts
        return dense.take(index)

    def _walk(self) -> list[int]:
        """The nodes holding the prompt's first block, with (`_counts`) how many leading
        blocks each holds."""
        holders = self._prefix.holders
        assert holders is not None
        model_index, hashes = self._model, self._hashes
        nodes: list[int] = []
        self._nodes = nodes
        held = holders.get((hashes[0] << _MODEL_BITS) | model_index)
        if not held:
            return nodes
        # Walk the prompt's blocks with set intersections (in C): the nodes that drop out at
        # block j hold exactly j leading blocks; those left at the end hold them all.
        counts = self._counts
        level = held  # never changed below: each step makes new sets
        for j in range(1, len(hashes)):
            more = holders.get((hashes[j] << _MODEL_BITS) | model_index)
            kept = level & more if more else set()
            if len(kept) != len(level):
                dropped = level - kept
                nodes.extend(dropped)
                counts.extend([j] * len(dropped))
                level = kept
                if not level:
                    break
        nodes.extend(level)
        counts.extend([len(hashes)] * len(level))
        return nodes
