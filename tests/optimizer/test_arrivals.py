"""Arrivals drawn as placement requests on a topology: sources and models by share, with the
seed (docs/contracts.md §2). Names an observations file gives: test_observations.py."""

from __future__ import annotations

import pytest

from optimizer.arrivals import draw_requests
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace
from tests.optimizer.fleets import AZURE, FLEET_DEMO


def test_sources_and_models_are_drawn_by_share_with_the_seed() -> None:
    topo = load_topology(FLEET_DEMO)
    trace = load_trace(AZURE, limit=2000)
    a = draw_requests(trace, topo, seed=5)
    assert a == draw_requests(trace, topo, seed=5)
    assert a != draw_requests(trace, topo, seed=6)
    share = sum(r.model == "llama-3.1-8b" for r in a) / len(a)
    assert share == pytest.approx(0.55, abs=0.05)
    eu = [r for r in a if r.slo == "interactive-eu"]
    assert eu and all(r.residency == "EU" for r in eu)
