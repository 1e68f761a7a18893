"""The constraints filter: the hard constraints of docs/contracts.md §1, always the first filter.

The fleet's cached length-independent split (model, state, residency, reachability:
`Fleet.split`), then each survivor's KV room. Reasons (`Trip.rejected`) and their precedence are
`optimizer.constraints`' per-node definition, which the parity tests hold this to. A GIE EPP
filter plugin (pkg/epp/scheduling/framework/plugins/filter); the only one that starts from
the whole fleet rather than narrowing what an earlier filter left.
"""

from __future__ import annotations

from optimizer.decide.framework import Trip


class ConstraintsFilter:
    """The hard constraints; sets the trip's split (the other filters narrow its index)."""

    name = "constraints"

    def filter(self, trip: Trip) -> None:
        """Candidate node indices in topology order, the static split and the indices
        rejected for KV room; KeyError for a model the fleet does not know."""
        fleet, request = trip.fleet, trip.request
        model = fleet.model_index[request.model]
        split = fleet.split(model, request.source_site, request.residency)
        need = (request.prompt_tokens + request.max_output_tokens) * fleet.kv_per_token[model]
        trip.split = split
        if need <= split.min_capacity:  # room on every survivor: `no_room` stays empty
            trip.index = split.index
        else:
            room = split.capacity >= need
            trip.index, trip.no_room = split.index[room], split.index[~room]
