"""The three plugin interfaces of a decision, declared in one place, and the trip they share.

Laid out as the Gateway API Inference Extension's endpoint picker declares its scheduler
(kubernetes-sigs/gateway-api-inference-extension, pkg/epp/scheduling/framework/plugins.go):
filters narrow the candidate endpoints, scorers give each survivor a score, a picker chooses
from the scores. `optimizer.decide.pipeline` is the one place that runs them in that order;
`optimizer.decide.registry` names each plugin. Interfaces are structural (`Protocol`), so a
plugin is any object with the method, not a subclass.

`Trip` is what the EPP calls the cycle state: one request's way through the filters. It keeps
node indices, not objects, because the candidates are columns (`Candidates`), and the reasons
for rejected nodes are built only when asked for (the simulator rarely needs them).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import (
    CODE_NO_KV_ROOM,
    REASONS,
    ROLE_REASONS,
    Fleet,
    StaticSplit,
)
from optimizer.decide.state.live import LiveState
from optimizer.decide.state.prefix import PrefixIndex

_NONE = np.zeros(0, dtype=np.int64)  # shared, never written: a trip's index before filtering


class Trip:
    """One request's filtering: the surviving node indices (ascending) and why others went."""

    __slots__ = (
        "fleet",
        "request",
        "dynamic",
        "live",
        "now",
        "among",
        "index",
        "pool",
        "off_role",
        "split",
        "no_room",
        "notes",
    )

    def __init__(
        self,
        fleet: Fleet,
        request: PlacementRequest,
        dynamic: np.ndarray,
        live: LiveState | None = None,
        now: float = 0.0,
        among: AbstractSet[str] | None = None,
    ) -> None:
        """`dynamic`: the whole fleet's (nodes, DYNAMIC_COLUMNS) state the decision reads;
        `live`: the sampled state the decision reads, when it reads samples (None: the
        exact state, which never goes stale); `now`: the decision's time on the clock of
        those samples; `among`: the only node names the caller lets it consider (None: all)."""
        self.fleet = fleet
        self.request = request
        self.dynamic = dynamic
        self.live = live
        self.now = now
        self.among = among
        self.index: np.ndarray = _NONE
        # Every role's survivors of the filters, for a split's prefill and decode nodes: the
        # same as `index` unless the roles filter ran (`optimizer.decide.filters.roles`).
        self.pool: np.ndarray = _NONE
        # Survivors of the filters a one-node answer cannot use (prefill- or decode-only):
        # their reason comes from their role when asked for, as hundreds may be left out.
        self.off_role: np.ndarray = _NONE
        self.split: StaticSplit | None = None
        self.no_room: np.ndarray = _NONE
        # Made on the first rejection: most trips see none past the constraints.
        self.notes: list[tuple[int, str]] | None = None

    def reject(self, index: np.ndarray, keep: np.ndarray, reason: str) -> None:
        """Keep `index[keep]` as the survivors; note `reason` for every other one."""
        if self.notes is None:
            self.notes = []
        self.notes.extend((i, reason) for i in index[~keep].tolist())
        self.index = index[keep]

    def rejected(self) -> dict[str, str]:
        """Every rejected node the caller may see (within `among`) with its first reason:
        the constraints' first, in their precedence, then the later filters' in order."""
        names = self.fleet.names
        rejected = dict(self.split.rejected) if self.split is not None else {}
        kv = REASONS[CODE_NO_KV_ROOM]
        for i in self.no_room.tolist():
            rejected[names[i]] = kv
        if self.among is not None:
            among = self.among
            rejected = {n: r for n, r in rejected.items() if n in among}
        for i, reason in self.notes or ():
            rejected[names[i]] = reason
        if len(self.off_role):
            role = self.fleet.role
            for i in self.off_role.tolist():
                rejected[names[i]] = ROLE_REASONS[role[i]]
        return rejected


class Filter(Protocol):
    """Narrows `trip.index` (`Trip.reject` notes why); never reorders it."""

    name: str

    def filter(self, trip: Trip) -> None: ...


class Scorer(Protocol):
    """One float per candidate, in candidate order; higher is better."""

    name: str

    def score(self, c: Candidates) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class Split:
    """Why an answer is split: the KV it moves from the prefill node's site to the decode
    node's, how long that takes over the link between them (its RTT plus the bytes at its
    bandwidth), and the estimated TTFT split against the one-node answer's it replaces (the
    scorer's pick; None when no mixed node could answer)."""

    kv_bytes: int
    transfer_s: float
    ttft_split_s: float
    ttft_mixed_s: float | None

    def explain(self) -> dict[str, Any]:
        """For an answer or a receipt (milliseconds, as the decision API reports latencies)."""
        mixed = self.ttft_mixed_s
        return {
            "kv_bytes": self.kv_bytes,
            "transfer_ms": round(self.transfer_s * 1000, 3),
            "estimated_ttft_split_ms": round(self.ttft_split_s * 1000, 3),
            "estimated_ttft_mixed_ms": None if mixed is None else round(mixed * 1000, 3),
        }


class Pair(NamedTuple):
    """One answer of a decision, as fleet indices: the node that decodes (and answers the
    request), and the node that prefills its prompt when the answer is split (None: the
    decode node runs both phases), with the split's explanation."""

    decode: int
    prefill: int | None = None
    split: Split | None = None


class Splitter(Protocol):
    """Turns a decision's one-node answers into pairs when splitting prefill from decode is
    better (`optimizer.decide.pickers.split`); None keeps the one-node answers."""

    name: str

    def pairs(
        self,
        trip: Trip,
        mixed: Candidates,
        order: list[int],
        k: int,
        prefix: PrefixIndex | None,
    ) -> list[Pair] | None: ...


class Picker(Protocol):
    """The positions of the chosen candidate and its fallbacks, best first."""

    name: str

    def pick(self, scores: np.ndarray, k: int) -> list[int]: ...
