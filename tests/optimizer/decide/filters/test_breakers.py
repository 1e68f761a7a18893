"""Circuit breaker transitions with a fake clock, and the breakers filter over a board."""

from __future__ import annotations

from typing import Any

import numpy as np

from optimizer.decide.filters.breakers import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    REASON_BREAKER,
    BreakerBoard,
    BreakerConfig,
    BreakerFilter,
)
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.fleet import Fleet
from tests.optimizer.decide.conftest import constrained


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def board(**overrides: Any) -> tuple[BreakerBoard, Clock, list[tuple[str, str, str]]]:
    clock = Clock()
    moves: list[tuple[str, str, str]] = []
    config = BreakerConfig(
        **{
            "consecutive_failures": 3,
            "window_s": 60,
            "error_rate": 0.5,
            "min_requests": 6,
            "open_s": 30,
            "half_open_probes": 2,
            "close_after_successes": 2,
            **overrides,
        }
    )
    b = BreakerBoard(
        config, on_transition=lambda n, a, z, why: moves.append((n, a, z)), clock=clock
    )
    return b, clock, moves


def test_it_trips_on_consecutive_failures() -> None:
    b, _, moves = board()
    b.record("n", False)
    b.record("n", False)
    assert b.state("n") == CLOSED and b.allows("n")
    b.record("n", False)
    assert b.state("n") == OPEN and not b.allows("n")
    assert moves == [("n", CLOSED, OPEN)]


def test_a_success_resets_the_consecutive_count() -> None:
    b, _, _ = board()
    for ok in (False, False, True, False, False):
        b.record("n", ok)
    assert b.state("n") == CLOSED


def test_it_trips_on_the_error_rate_over_the_window() -> None:
    b, clock, _ = board(consecutive_failures=100)
    for ok in (True, False, True, False, True, False):  # 50% of 6 requests
        clock.now += 1
        b.record("n", ok)
    assert b.state("n") == OPEN


def test_old_outcomes_leave_the_window() -> None:
    b, clock, _ = board(consecutive_failures=100)
    for ok in (False, False, False):
        b.record("n", ok)
    clock.now += 61  # those three failures age out
    for _ in range(5):
        b.record("n", True)
    b.record("n", False)
    assert b.state("n") == CLOSED


def test_open_becomes_half_open_then_closes_after_probe_successes() -> None:
    b, clock, moves = board()
    for _ in range(3):
        b.record("n", False)
    clock.now += 30
    assert b.state("n") == HALF_OPEN
    assert b.allows("n")
    b.on_pick("n")
    b.on_pick("n")
    assert not b.allows("n")  # two probes in flight is the limit
    b.record("n", True)
    assert b.state("n") == HALF_OPEN
    b.record("n", True)
    assert b.state("n") == CLOSED
    assert moves == [("n", CLOSED, OPEN), ("n", OPEN, HALF_OPEN), ("n", HALF_OPEN, CLOSED)]


def test_a_failed_probe_opens_the_breaker_again() -> None:
    b, clock, _ = board()
    for _ in range(3):
        b.record("n", False)
    clock.now += 30
    assert b.state("n") == HALF_OPEN
    b.on_pick("n")
    b.record("n", False)
    assert b.state("n") == OPEN
    clock.now += 29
    assert b.state("n") == OPEN


def test_the_filter_leaves_out_open_breakers_with_their_reason(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    trip = constrained(fleet, request_, dynamic)
    b, _, _ = board()
    first = fleet.names[int(trip.index[0])]
    for _ in range(3):
        b.record(first, False)
    BreakerFilter(b).filter(trip)
    names = [fleet.names[i] for i in trip.index.tolist()]
    assert first not in names and names
    assert trip.rejected()[first] == REASON_BREAKER


def test_the_filter_lets_half_open_probes_through_up_to_the_limit(
    fleet: Fleet, request_: PlacementRequest, dynamic: np.ndarray
) -> None:
    b, clock, _ = board()
    trip = constrained(fleet, request_, dynamic)
    first = fleet.names[int(trip.index[0])]
    for _ in range(3):
        b.record(first, False)
    clock.now += 31  # past open_s: half-open, two probes allowed
    BreakerFilter(b).filter(trip)
    assert first in [fleet.names[i] for i in trip.index.tolist()]
    b.on_pick(first)
    b.on_pick(first)
    again = constrained(fleet, request_, dynamic)
    BreakerFilter(b).filter(again)
    assert first not in [fleet.names[i] for i in again.index.tolist()]
