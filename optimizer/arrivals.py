"""A trace's arrivals as placement requests on one topology (docs/contracts.md §2): each
arrival gets a source and a model, drawn by the topology's shares with the run's seed, or taken
as given where the trace line names them (an observations file, docs/twin.md), checked against
the topology so that an unknown name is refused with its file and line.

Reading the trace files is `optimizer.traces`; this is what a replay, training and
calibration make of them on a fleet.
"""

from __future__ import annotations

import numpy as np

from optimizer.decide.request import PlacementRequest, placement_request
from optimizer.errors import InputFileError
from optimizer.topology import Topology
from optimizer.traces import TraceRequest


def _probabilities(shares: np.ndarray) -> np.ndarray:
    """Shares as probabilities. Scaled by the largest first, so the sum cannot overflow to
    infinity (two shares of 1e308 are 1:1, not a failed draw)."""
    scaled = shares / shares.max()
    return scaled / scaled.sum()


def draw_requests(
    trace: list[TraceRequest], topology: Topology, seed: int
) -> list[PlacementRequest]:
    """Give each arrival a source (by `sources` share) and a model (by `workload` share), both
    drawn with the run's seed (docs/contracts.md §2), unless the trace line gives them (an
    observations file): then they are taken as given, and an unknown name raises
    InputFileError naming the file and line. The draws are made for every arrival either way,
    so a plain trace gets the same sources and models as before. A topology without sources
    sends every request from its first site with no SLO."""
    rng = np.random.default_rng(seed)
    n = len(trace)
    if topology.sources:
        shares = np.array([s.share for s in topology.sources], dtype=np.float64)
        source_idx = rng.choice(len(shares), size=n, p=_probabilities(shares))
    else:
        source_idx = np.zeros(n, dtype=np.int64)
    model_shares = topology.model_shares()
    weights = np.array([share for _, share in model_shares], dtype=np.float64)
    model_idx = rng.choice(len(weights), size=n, p=_probabilities(weights))
    requests = []
    problems: list[str] = []
    bad_file = ""
    for i, item in enumerate(trace):
        model = model_shares[int(model_idx[i])][0]
        site: str
        slo: str | None
        name: str | None
        if topology.sources:
            source = topology.sources[int(source_idx[i])]
            site, slo, name = source.site, source.slo, source.name
        else:
            site, slo, name = topology.sites[0].name, None, None
        given = _given(item, topology)
        if isinstance(given, str):
            problems.append(given)
            bad_file = item.where.rsplit(":", 1)[0]
            continue
        model = given.get("model") or model
        if "site" in given:
            site, name = given["site"] or site, given["source"]
        if "slo" in given:
            slo = given["slo"]
        requests.append(
            placement_request(
                topology,
                model=model,
                source_site=site,
                slo=slo,
                prompt_tokens=item.prompt_tokens,
                max_output_tokens=item.output_tokens,
                prefix_hashes=item.hash_ids,
                source=name,
            )
        )
    if problems:
        # Every bad line at once (up to a screenful), as the topology loader reports.
        raise InputFileError(bad_file, problems[:20])
    return requests


def _given(item: TraceRequest, topology: Topology) -> dict[str, str | None] | str:
    """The names a trace line gives, checked against the topology; a problem as a string.

    `site` without `source` is a caller without a registered source (the decision API's
    `site`); a given source brings its site and, unless `slo` is given too, its SLO."""
    given: dict[str, str | None] = {}
    if item.model is not None:
        if item.model not in topology.model_by_name:
            return f"{item.where}: field 'model': unknown model {item.model!r}"
        given["model"] = item.model
    if item.source is not None:
        source = topology.source_by_name.get(item.source)
        if source is None:
            return f"{item.where}: field 'source': unknown source {item.source!r}"
        given.update(source=source.name, site=source.site, slo=source.slo)
    elif item.site is not None:
        if item.site not in topology.site_by_name:
            return f"{item.where}: field 'site': unknown site {item.site!r}"
        given.update(source=None, site=item.site, slo=None)
    if item.slo_given:
        if item.slo is not None and item.slo not in topology.slo_by_name:
            return f"{item.where}: field 'slo': unknown SLO {item.slo!r}"
        given["slo"] = item.slo
    return given
