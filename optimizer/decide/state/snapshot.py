"""The in-memory state a decision reads: inventory, latest telemetry, rollout, shared breakers.

Pure data: the console builds it from the database (`console.placement.selectors`).

A snapshot is immutable and replaced whole by a background refresh
(`console.placement.engine.runtime`), so a
decision never queries the database or the network and never sees half an update. Building
one reads the database; when that fails the previous snapshot stays in service and only its
age grows (docs/architecture.md rule 2: a dead database degrades freshness, never availability).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from optimizer.decide.state.live import NodeSample
from optimizer.topology import Topology

logger = logging.getLogger(__name__)


# The latest telemetry of one node that placement uses, with when it was measured: the
# optimizer's LiveState sample, so the engine and the simulator read telemetry alike.
NodeLoad = NodeSample


@dataclass(frozen=True, slots=True)
class PolicyRef:
    """A policy the engine can serve: what to load, and how to name it in answers."""

    name: str
    version: str
    spec: str  # a built-in heuristic's name, or a directory written by `train`
    version_id: int | None = None  # the PolicyVersion row, None for the configured default
    sha256: str = ""  # a trained version's scorer.pt as registered ("": not checked)

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True, slots=True)
class Rollout:
    """Which policies serve traffic: the active one, and optionally a shadow and a canary."""

    active: PolicyRef
    shadow: PolicyRef | None = None
    canary: PolicyRef | None = None
    canary_share: float = 0.0


@dataclass(frozen=True, slots=True)
class Probe:
    """A running exploration probe (docs/twin.md, "Exploration probe"): `share` of decisions
    (0..1, sticky per session like the canary arm) go to a node of `targets`, (node, model)
    pairs the twin has too few observations of, when one is a feasible candidate whose
    estimates meet the request's SLO. `remaining`: how many it may still send, as the
    database counted them when the snapshot was built; `max_requests`: its whole budget."""

    probe_id: int
    share: float
    targets: frozenset[tuple[str, str]]
    remaining: int
    max_requests: int


@dataclass(frozen=True)
class Snapshot:
    """Everything a decision needs, built off the request path."""

    topology: Topology
    loads: dict[str, NodeLoad]
    rollout: Rollout
    shared_open_breakers: frozenset[str] = frozenset()
    inventory_revision: int = -1
    probe: Probe | None = None
    built_at: float = field(default_factory=time.time)

    def age_s(self, now: float | None = None) -> float:
        return (time.time() if now is None else now) - self.built_at
