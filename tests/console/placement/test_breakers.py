"""Circuit breaker transitions, unit-level with a fake clock and through outcomes over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from optimizer.decide.filters.breakers import CLOSED, HALF_OPEN, OPEN, BreakerBoard, BreakerConfig


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


@pytest.mark.django_db
def test_failed_outcomes_over_http_trip_the_node_and_traffic_moves(
    mixed_fleet: Any, client_for: Any
) -> None:
    import dataclasses

    from console.placement.models import BreakerEvent

    # The fixture's 0.2 s open period suits the half-open tests; here the breaker must stay
    # open while twenty decisions are made, however slow the machine.
    board = mixed_fleet.breakers
    board.config = dataclasses.replace(board.config, open_s=600.0)
    service = client_for("service")
    request = {
        "model": "llama-3.1-8b",
        "source": "munich-app",
        "prompt_tokens": 500,
        "max_output_tokens": 50,
    }
    first = service.post("/api/v1/placements", request, format="json").json()
    victim = first["node"]
    on_victim = [first["decision_id"]]
    for _ in range(50):  # a decision takes one outcome: find another one on the victim
        answer = service.post("/api/v1/placements", request, format="json").json()
        if answer["node"] == victim:
            on_victim.append(answer["decision_id"])
            break
    service.post(f"/api/v1/placements/{on_victim[0]}/outcome", {"ok": False}, format="json")
    mixed_fleet.breakers.record(victim, ok=False)
    last = service.post(
        f"/api/v1/placements/{on_victim[1]}/outcome", {"ok": False}, format="json"
    ).json()
    assert last["breaker"] == OPEN
    for _ in range(20):
        assert service.post("/api/v1/placements", request, format="json").json()["node"] != victim
    mixed_fleet.recorder.flush()
    event = BreakerEvent.objects.get(node=victim, to_state=OPEN)
    assert "consecutive failures" in event.reason
    text = client_for(None).get("/metrics").content.decode()
    assert f'locus_breaker_trips_total{{node="{victim}"}}' in text
