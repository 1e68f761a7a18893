"""Circuit breakers through outcomes over HTTP: a tripped node's traffic moves, and the trip
is recorded (the board's own transitions: tests/optimizer/decide/filters/test_breakers.py)."""

from __future__ import annotations

from typing import Any

import pytest

from optimizer.decide.filters.breakers import OPEN


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
