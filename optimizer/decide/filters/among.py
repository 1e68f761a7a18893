"""The subset filter: only the nodes the caller names (the scheduler extender's node list, a
gateway's endpoint subset), as the GIE EPP narrows to the endpoints a request's subset hint
names (x-gateway-destination-endpoint-subset). Nodes outside the subset are not the caller's
business, so their rejections are left out of the answer too (`Trip.rejected`)."""

from __future__ import annotations

import numpy as np

from optimizer.decide.framework import Trip


class AmongFilter:
    """Keeps the candidates named in `trip.among`; inert when the caller names none."""

    name = "among"

    def filter(self, trip: Trip) -> None:
        among = trip.among
        if among is None:
            return
        names = trip.fleet.names
        keep = np.array([names[i] in among for i in trip.index.tolist()], dtype=bool)
        trip.index = trip.index[keep]
