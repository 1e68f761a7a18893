"""θ of a fleet and back: the values calibration fits, in design.Layout's order."""

from __future__ import annotations

import numpy as np

from optimizer.calibration.replay import rebuilt
from optimizer.calibration.report import PROFILE_VALUES
from optimizer.topology import Topology
from optimizer.topology_entries import Profile

__all__ = ["kept", "parameters", "with_parameters"]


def parameters(
    topology: Topology, links: tuple[int, ...], transfers: tuple[int, ...] = ()
) -> np.ndarray:
    """θ of a fleet (design.Layout's order): 1/prefill rate, decode step and per-sequence
    step per profile, in seconds, then the RTT of each link in `links`, then the seconds per
    byte of each link in `transfers`."""
    p = topology.profiles
    return np.concatenate(
        [
            [1.0 / pr.prefill_tokens_per_s for pr in p],
            [pr.decode_step_ms / 1000.0 for pr in p],
            [pr.decode_step_ms_per_seq / 1000.0 for pr in p],
            [topology.links[i].rtt_ms / 1000.0 for i in links],
            [8.0 / (topology.links[i].bandwidth_gbps * 1e9) for i in transfers],
        ]
    )


def with_parameters(
    topology: Topology, theta: np.ndarray, links: tuple[int, ...], transfers: tuple[int, ...] = ()
) -> Topology:
    """`topology` with profile speeds, fitted link RTTs and fitted link bandwidths taken from θ
    (rounded for the file)."""
    n = len(topology.profiles)
    profiles = tuple(
        pr.model_copy(
            update={
                "prefill_tokens_per_s": round(1.0 / theta[i], 2),
                "decode_step_ms": round(theta[n + i] * 1000.0, 5),
                "decode_step_ms_per_seq": round(theta[2 * n + i] * 1000.0, 6),
            }
        )
        for i, pr in enumerate(topology.profiles)
    )
    new_links = list(topology.links)
    for j, i in enumerate(links):
        new_links[i] = new_links[i].model_copy(update={"rtt_ms": round(theta[3 * n + j] * 1e3, 4)})
    for j, i in enumerate(transfers):
        gbps = round(8.0 / (theta[3 * n + len(links) + j] * 1e9), 4)
        new_links[i] = new_links[i].model_copy(update={"bandwidth_gbps": gbps})
    return rebuilt(topology, profiles=profiles, links=tuple(new_links))


def kept(old: Profile, new: Profile, identified: np.ndarray, i: int, n: int) -> Profile:
    """Profile i with its identified values from `new` and the rest exactly as in `old`."""
    update = {
        name: getattr(new, name)
        for name, j in zip(PROFILE_VALUES, (i, n + i, 2 * n + i), strict=True)
        if identified[j]
    }
    return old.model_copy(update=update) if update else old
