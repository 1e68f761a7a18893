"""The top-k picker."""

from __future__ import annotations

import numpy as np

from optimizer.decide.pickers.top_k import TopKPicker, top_k


def test_pick_then_fallbacks_by_descending_score_ties_to_the_earlier() -> None:
    assert TopKPicker().pick(np.array([1.0, 3.0, 3.0, 2.0]), 3) == [1, 2, 3]


def test_one_is_the_argmax() -> None:
    scores = np.array([0.5, 2.0, 2.0])
    assert top_k(scores, 1) == [1]


def test_a_large_fleet_gives_the_stable_sorts_head() -> None:
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 50, 1000).astype(np.float64)  # many ties
    expected = np.argsort(-scores, kind="stable")[:8].tolist()
    assert top_k(scores, 8) == expected
