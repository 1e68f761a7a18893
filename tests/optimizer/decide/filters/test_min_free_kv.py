"""The min-free-KV filter (docs/architecture.md's example of adding a filter)."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.decide.filters.min_free_kv import REASON_LOW_FREE_KV, MinFreeKvFilter
from optimizer.decide.pipeline import Pipeline
from optimizer.decide.registry import get_filter, get_policy
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.fleet import D_KV_USED, S_KV_CAPACITY, Fleet
from tests.optimizer.decide.conftest import constrained


def _fill(fleet: Fleet, request: PlacementRequest, dynamic: np.ndarray, node: int, used: float):
    capacity = fleet.static[fleet.model_index[request.model]][node, S_KV_CAPACITY]
    dynamic[node, D_KV_USED] = used * capacity


def test_a_nearly_full_node_is_left_out_with_its_reason(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    full = int(constrained(fleet, request_, dynamic).index[0])
    _fill(fleet, request_, dynamic, full, 0.95)
    trip = constrained(fleet, request_, dynamic)
    MinFreeKvFilter(min_free=0.2).filter(trip)
    assert full not in trip.index.tolist() and len(trip.index)
    assert trip.rejected()[fleet.names[full]] == REASON_LOW_FREE_KV


def test_when_every_node_is_full_none_is_left_out(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    before = constrained(fleet, request_, dynamic).index
    for node in before.tolist():
        _fill(fleet, request_, dynamic, node, 0.99)
    trip = constrained(fleet, request_, dynamic)
    MinFreeKvFilter(min_free=0.2).filter(trip)
    assert trip.index.tolist() == before.tolist()


def test_it_is_one_registry_name_away_from_any_pipeline(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    """Named in a pipeline, it changes the pick: the least-loaded node is nearly full."""
    nodes = constrained(fleet, request_, dynamic).index.tolist()
    dynamic[:, 0] = 5.0  # every candidate has a queue ...
    dynamic[nodes[0], 0] = 0.0  # ... but the first, whose KV cache is nearly full
    _fill(fleet, request_, dynamic, nodes[0], 0.9)
    policy = get_policy("least-loaded", fleet.topology)
    plain = Pipeline([get_filter("constraints")])
    guarded = Pipeline([get_filter("constraints"), get_filter("min-free-kv", min_free=0.2)])
    assert plain.decide(fleet, request_, dynamic, None, policy, 1).node == nodes[0]
    assert guarded.decide(fleet, request_, dynamic, None, policy, 1).node != nodes[0]


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_a_share_outside_0_to_1_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="min_free"):
        MinFreeKvFilter(min_free=bad)
