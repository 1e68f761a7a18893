"""A node's prefix cache: the KV blocks of recent prompts, evicted least recently used.

Like vLLM's automatic prefix caching, blocks of finished prefills stay resident while memory
is free and are evicted LRU when sequences need the room. The blocks a running sequence reads
(its prompt's) are pinned: they are part of that sequence's KV and never evicted under it, and
they do not count against the cache's budget, which is the memory left beside the running
sequences (the simulator's node passes its KV capacity minus what running sequences reserve).
Blocks are keyed by (model, hash id) folded into one int, because the same hash under two
models is two different KV blocks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

# Models per node are few; folding the model index into the low bits keeps keys plain ints.
_MODEL_BITS = 6


def block_key(model_index: int, hash_id: int) -> int:
    """The cache key of one block of one model."""
    return (hash_id << _MODEL_BITS) | model_index


class PrefixCache:
    """LRU set of KV blocks with their sizes, within a byte budget set by its owner."""

    __slots__ = ("_blocks", "_pins", "bytes", "pinned_bytes")

    def __init__(self) -> None:
        self._blocks: OrderedDict[int, int] = OrderedDict()
        self._pins: dict[int, int] = {}  # block -> running sequences reading it
        self.bytes = 0
        self.pinned_bytes = 0

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
                size = blocks.popitem(last=False)[1]
                self.bytes -= size
                excess -= size
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

    def clear(self) -> None:
        self._blocks.clear()
        self._pins.clear()
        self.bytes = 0
        self.pinned_bytes = 0


def match_many(
    caches: Sequence[PrefixCache | None],
    index: np.ndarray,
    model_index: int,
    hashes: tuple[int, ...],
) -> np.ndarray:
    """`match` on the caches of the nodes in `index` (None: nothing cached), as float64.

    Most nodes hold none of a prompt's first block, so that one lookup is made inline and
    `match` is called only for the nodes that have it."""
    out = np.zeros(len(index), dtype=np.float64)
    first = (hashes[0] << _MODEL_BITS) | model_index
    for j, i in enumerate(index.tolist()):
        cache = caches[i]
        if cache is not None and first in cache._blocks:
            out[j] = cache.match(model_index, hashes)
    return out
