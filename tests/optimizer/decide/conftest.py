"""A small fleet and a request every node of its model may serve, for the plugin tests."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.decide.filters.constraints import ConstraintsFilter
from optimizer.decide.framework import Trip
from optimizer.decide.request import PlacementRequest, placement_request
from optimizer.decide.state.fleet import DYNAMIC_COLUMNS, Fleet
from optimizer.topology_files import load_topology
from tests.conftest import CONTRACT_EXAMPLE


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return Fleet(load_topology(CONTRACT_EXAMPLE))


@pytest.fixture
def request_(fleet: Fleet) -> PlacementRequest:
    topology = fleet.topology
    source = topology.sources[0]
    return placement_request(
        topology,
        model=topology.models[0].name,
        source_site=source.site,
        slo=source.slo,
        prompt_tokens=100,
        max_output_tokens=10,
    )


@pytest.fixture
def dynamic(fleet: Fleet) -> np.ndarray:
    return np.zeros((fleet.size, DYNAMIC_COLUMNS))


def constrained(fleet: Fleet, request: PlacementRequest, dynamic: np.ndarray, **kw: object) -> Trip:
    """A trip past the constraints filter, with at least two candidates."""
    trip = Trip(fleet, request, dynamic, **kw)  # type: ignore[arg-type]
    ConstraintsFilter().filter(trip)
    assert len(trip.index) >= 2
    return trip
