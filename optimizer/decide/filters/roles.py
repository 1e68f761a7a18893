"""The roles filter: nodes that run one phase only stay out of one-node answers (issue #30).

A node's `role` (docs/contracts.md §1) is `mixed` (both phases), `prefill` or `decode`, as
llm-d labels its pods `llm-d.ai/role: prefill|decode|both` and its `prefill-filter` and
`decode-filter` keep each scheduling profile to its pods. A one-node answer runs both phases,
so only mixed nodes may give one; the trip keeps every role's survivors in `trip.pool`, where
a split (`optimizer.decide.pickers.split`) looks for its prefill and decode nodes. The
pipeline runs it after the other filters, and only on fleets with a one-phase node, so a fleet
of mixed nodes pays nothing for it.
"""

from __future__ import annotations

from optimizer.decide.framework import Trip
from optimizer.decide.state.fleet import REASON_DECODE_ONLY, REASON_PREFILL_ONLY, ROLE_CODES

_PREFILL = ROLE_CODES["prefill"]


class RolesFilter:
    """Keeps the mixed candidates; `trip.pool` keeps them all (either role)."""

    name = "roles"

    def filter(self, trip: Trip) -> None:
        index = trip.index
        trip.pool = index
        roles = trip.fleet.role[index]
        if not roles.any():
            return
        prefill_only = roles == _PREFILL
        if prefill_only.any():
            trip.reject(index, ~prefill_only, REASON_PREFILL_ONLY)
            index, roles = trip.index, roles[~prefill_only]
        decode_only = roles != 0
        if decode_only.any():
            trip.reject(index, ~decode_only, REASON_DECODE_ONLY)
