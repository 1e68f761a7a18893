"""An emulated tiny fleet (tests/optimizer/fleets.py's TINY) served on ephemeral ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from optimizer.emulator import FleetThread
from tests.optimizer.fleets import tiny_topology


@pytest.fixture(scope="module")
def emulator() -> Iterator[FleetThread]:
    """TINY's four nodes, each its own endpoint; `emulator.urls[name]` is its base URL."""
    with FleetThread(tiny_topology(), port_base=0) as served:
        yield served
