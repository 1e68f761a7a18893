"""The fleet's prefix index finds a prompt's matches as each node's own cache does, through
insertions, LRU evictions, pins and failures (cleared caches)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.decide.state.prefix import PrefixIndex, PrefixMatch

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


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_one_match_serves_several_node_sets_of_a_large_fleet(seed: int, indexed: bool) -> None:
    # Past 64 candidates a match is assembled with numpy, and the split stage asks the same
    # match for its pool after the scorer asked for the mixed candidates.
    nodes = 300
    rng = np.random.default_rng(seed)
    index = PrefixIndex(nodes, indexed=indexed)
    for node in np.flatnonzero(rng.random(nodes) < 0.4).tolist():
        depth = int(rng.integers(1, 5))
        index.cache_of(node).insert(0, tuple(rng.permutation(4)[:depth].tolist()), 1, 1 << 20)
    probe = (0, 1, 2, 3)
    match = PrefixMatch(index, 0, probe)
    for subset in (np.arange(nodes)[::3], np.arange(nodes), np.arange(nodes)[5:30], np.arange(0)):
        expected = [
            cache.match(0, probe) if (cache := index.caches[i]) is not None else 0
            for i in subset.tolist()
        ]
        assert match.on(subset).tolist() == expected
