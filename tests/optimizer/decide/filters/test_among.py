"""The subset filter."""

from __future__ import annotations

import numpy as np

from optimizer.decide.filters.among import AmongFilter
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.fleet import Fleet
from tests.optimizer.decide.conftest import constrained


def test_only_the_named_nodes_stay_and_others_rejections_are_hidden(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    first = fleet.names[int(constrained(fleet, request_, dynamic).index[0])]
    trip = constrained(fleet, request_, dynamic, among=frozenset({first}))
    AmongFilter().filter(trip)
    assert [fleet.names[i] for i in trip.index.tolist()] == [first]
    assert trip.rejected() == {}  # the constraints' rejections were of other nodes


def test_without_a_subset_it_is_inert(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    trip = constrained(fleet, request_, dynamic)
    index = trip.index
    AmongFilter().filter(trip)
    assert trip.index is index
