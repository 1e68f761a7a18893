"""The pipeline: filters in order, then the scorer, then the picker."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from optimizer.decide.filters.breakers import BreakerBoard, BreakerConfig
from optimizer.decide.pipeline import Pipeline
from optimizer.decide.registry import get_filter, get_policy
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import Fleet


class _Prefer:
    """Scores one node highest, the others by fleet position."""

    name = "prefer"

    def __init__(self, node: int) -> None:
        self.node = node

    def score(self, c: Candidates) -> np.ndarray:
        return np.where(c.index == self.node, 1e9, -c.index.astype(np.float64))


def test_the_pick_is_the_scorers_best_among_what_the_filters_left(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    pipeline = Pipeline([get_filter("constraints")])
    candidates, _ = pipeline.candidates(fleet, request_, dynamic, None)
    last = int(candidates.index[-1])
    choice = pipeline.decide(fleet, request_, dynamic, None, _Prefer(last), 3)
    assert choice.node == last
    others = [i for i in candidates.index.tolist() if i != last]
    assert [int(choice.candidates.index[i]) for i in choice.order[1:]] == others[:2]


def test_a_filter_later_in_the_pipeline_takes_the_pick_away(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    board = BreakerBoard(BreakerConfig(consecutive_failures=1))
    pipeline = Pipeline([get_filter("constraints"), get_filter("breakers", board=board)])
    candidates, _ = pipeline.candidates(fleet, request_, dynamic, None)
    best = int(candidates.index[0])
    board.record(fleet.names[best], False)
    choice = pipeline.decide(fleet, request_, dynamic, None, _Prefer(best), 1)
    assert choice.node is not None and choice.node != best
    assert choice.trip.rejected()[fleet.names[best]] == "breaker_open"


def test_no_candidate_gives_no_pick_and_the_reasons(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    huge = dataclasses.replace(request_, prompt_tokens=10**9)
    choice = Pipeline([get_filter("constraints")]).decide(
        fleet, huge, dynamic, None, get_policy("least-loaded", fleet.topology), 4
    )
    assert choice.node is None and choice.scores is None
    assert set(choice.trip.rejected().values()) >= {"no_kv_room"}


def test_the_constraints_must_come_first() -> None:
    with pytest.raises(ValueError, match="constraints"):
        Pipeline([get_filter("among")])
