"""A node's prefix cache: the KV blocks of recent prompts, evicted least recently used.

Like vLLM's automatic prefix caching, blocks of finished prefills stay resident while memory
is free and are evicted LRU when sequences need the room: the cache's byte budget is the
node's KV capacity minus what running sequences reserve. Blocks are keyed by (model, hash id)
folded into one int, because the same hash under two models is two different KV blocks.
"""

from __future__ import annotations

from collections import OrderedDict

# Models per node are few; folding the model index into the low bits keeps keys plain ints.
_MODEL_BITS = 6


def block_key(model_index: int, hash_id: int) -> int:
    """The cache key of one block of one model."""
    return (hash_id << _MODEL_BITS) | model_index


class PrefixCache:
    """LRU set of KV blocks with their sizes, within a byte budget set by its owner."""

    __slots__ = ("_blocks", "bytes")

    def __init__(self) -> None:
        self._blocks: OrderedDict[int, int] = OrderedDict()
        self.bytes = 0

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
        blocks = self._blocks
        for h in hashes:
            key = (h << _MODEL_BITS) | model_index
            if key in blocks:
                blocks.move_to_end(key)
            else:
                blocks[key] = block_bytes
                self.bytes += block_bytes
        self.shrink(budget)

    def shrink(self, budget: int) -> None:
        """Evict least recently used blocks until the cache fits in `budget` bytes."""
        blocks = self._blocks
        while self.bytes > budget and blocks:
            self.bytes -= blocks.popitem(last=False)[1]

    def clear(self) -> None:
        self._blocks.clear()
        self.bytes = 0
