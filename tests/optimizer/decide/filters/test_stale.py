"""The stale-telemetry filter."""

from __future__ import annotations

import numpy as np
import pytest

from optimizer.decide.filters.stale import REASON_STALE, StaleTelemetryFilter
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.fleet import Fleet
from optimizer.decide.state.live import LiveState, NodeSample
from tests.optimizer.decide.conftest import constrained


def _live(fleet: Fleet, measured: dict[int, float]) -> LiveState:
    live = LiveState(fleet)
    for node, at in measured.items():
        live.observe(node, NodeSample(queue_depth=0, running=0, kv_usage=0.0, measured_at=at))
    return live


def test_old_samples_are_left_out_while_fresh_ones_remain(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    a, b = constrained(fleet, request_, dynamic).index.tolist()[:2]
    live = _live(fleet, {a: 0.0, b: 95.0})
    trip = constrained(fleet, request_, dynamic, live=live, now=100.0)
    StaleTelemetryFilter(stale_after_s=30).filter(trip)
    assert a not in trip.index.tolist() and b in trip.index.tolist()
    assert trip.rejected()[fleet.names[a]] == REASON_STALE


def test_when_every_sample_is_old_none_is_left_out(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    index = constrained(fleet, request_, dynamic).index.tolist()
    live = _live(fleet, dict.fromkeys(index, 0.0))
    trip = constrained(fleet, request_, dynamic, live=live, now=100.0)
    StaleTelemetryFilter(stale_after_s=30).filter(trip)
    assert trip.index.tolist() == index


def test_exact_state_never_goes_stale(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    trip = constrained(fleet, request_, dynamic, now=1e9)
    before = trip.index.tolist()
    StaleTelemetryFilter(stale_after_s=1).filter(trip)
    assert trip.index.tolist() == before


def test_a_negative_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match="stale_after_s"):
        StaleTelemetryFilter(stale_after_s=-1)
