"""Fixtures for the twin: the demo fleet in the inventory and a fresh decision engine."""

from __future__ import annotations

from typing import Any

import pytest

from console.placement.engine.runtime import Runtime, runtime
from tests.conftest import TOPOLOGIES
from tests.console.placement.conftest import engine_settings

__all__ = ["engine_settings"]


@pytest.fixture
def demo_engine(db: Any, engine_settings: Any) -> Runtime:
    """The nominal demo fleet (fleet-demo.yaml) in the inventory, the engine refreshed."""
    from console.inventory.services import topology_import
    from optimizer.topology_files import load_topology

    topology_import(topology=load_topology(TOPOLOGIES / "fleet-demo.yaml"))
    rt = runtime()
    rt.refresh()
    return rt
