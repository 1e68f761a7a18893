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


class RolesFilter:
    """Keeps the mixed candidates; `trip.pool` keeps them all (either role), and
    `trip.off_role` the others (`Trip.rejected` names their role)."""

    name = "roles"

    def filter(self, trip: Trip) -> None:
        index = trip.index
        trip.pool = index
        mixed = trip.fleet.mixed[index]
        if mixed.all():
            return
        trip.index = index[mixed]
        trip.off_role = index[~mixed]
