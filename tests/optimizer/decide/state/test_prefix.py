"""The fleet's prefix index finds a prompt's matches as each node's own cache does, through
insertions, LRU evictions, pins and failures (cleared caches)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.decide.state.prefix import PrefixIndex

NODES = 5
operation = st.tuples(
    st.sampled_from(["insert", "shrink", "clear"]),
    st.integers(0, NODES - 1),
    st.lists(st.integers(0, 6), min_size=1, max_size=5).map(tuple),
    st.integers(0, 8),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(operation, max_size=40),
    st.lists(st.integers(0, 6), min_size=1, max_size=5),
    st.booleans(),
)
def test_the_index_matches_as_every_cache_does(
    operations: list[tuple[str, int, tuple[int, ...], int]], probe: list[int], indexed: bool
) -> None:
    index = PrefixIndex(NODES, indexed=indexed)
    for op, node, hashes, budget in operations:
        cache = index.cache_of(node)
        if op == "insert":
            cache.insert(node % 2, hashes, 1, budget)
        elif op == "shrink":
            cache.shrink(budget)
        else:
            cache.clear()
    candidates = np.arange(NODES)[::2]  # a subset, ascending
    for model in (0, 1):
        expected = [
            cache.match(model, tuple(probe)) if (cache := index.caches[i]) is not None else 0
            for i in candidates.tolist()
        ]
        assert index.match(candidates, model, tuple(probe)).tolist() == expected
