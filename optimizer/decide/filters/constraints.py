"""The constraints filter: the hard constraints of docs/contracts.md §1, always the first filter.

The fleet's cached length-independent split (model, state, residency, reachability:
`Fleet.split`), then each survivor's KV room. Reasons (`Trip.rejected`) and their precedence are
`optimizer.constraints`' per-node definition, which the parity tests hold this to. A GIE EPP
filter plugin (pkg/epp/scheduling/framework/plugins/filter); the only one that starts from
the whole fleet rather than narrowing what an earlier filter left.
"""

from __future__ import annotations

import numpy as np

from optimizer.decide.framework import Trip
from optimizer.decide.request import PlacementRequest
from optimizer.decide.state.fleet import Fleet, StaticSplit


class ConstraintsFilter:
    """The hard constraints; sets the trip's split (the other filters narrow its index)."""

    name = "constraints"

    def filter(self, trip: Trip) -> None:
        trip.index, trip.split, trip.no_room = constrain(trip.fleet, trip.request)


def constrain(
    fleet: Fleet, request: PlacementRequest
) -> tuple[np.ndarray, StaticSplit, np.ndarray]:
    """The hard constraints: (candidate node indices in topology order, the static split,
    the indices rejected for KV room). Raise KeyError for a model the fleet does not know."""
    model = fleet.model_index[request.model]
    split = fleet.split(model, request.source_site, request.residency)
    need = (request.prompt_tokens + request.max_output_tokens) * fleet.kv_per_token[model]
    room = split.capacity >= need
    if room.all():
        return split.index, split, split.index[:0]
    return split.index[room], split, split.index[~room]
