"""Who uses a generated fleet: sources at the sites where users and batch jobs are, each
reaching every workload model, and SLOs whose targets are attainable on the topology."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from optimizer.constraints import filter_candidates
from optimizer.decide.request import PlacementRequest, placement_request
from optimizer.decide.state.estimates import PROMPT_BYTES_PER_TOKEN
from optimizer.decision import NodeView, node_view
from optimizer.estimates import decode_step_s, estimate
from optimizer.fleetgen.geography import CORE_TIERS, Fleet, add_link
from optimizer.topology import Topology

# Attainability is checked for a long request: the Mooncake trace's mean prompt is ~15k tokens.
REFERENCE_PROMPT_TOKENS = 16_384
REFERENCE_OUTPUT_TOKENS = 256
SLO_HEADROOM = 2.0
# Source classes by site tier: user-facing apps at devices and edges, batch jobs in the core.
INTERACTIVE: dict[str, float] = {"ttft_p95_ms": 6000.0, "e2e_p95_ms": 60000.0}
BATCH: dict[str, float] = {"ttft_p95_ms": 30000.0, "e2e_p95_ms": 300000.0, "max_usd_per_1k": 20.0}
SOURCE_TIER_WEIGHT = {"device": 0.3, "edge": 1.0, "regional": 0.5, "cloud": 0.5}
# Residency is asked for by EU sources (GDPR) more often than by others.
RESIDENCY_PROBABILITY = {"EU": 0.6}
OTHER_RESIDENCY_PROBABILITY = 0.15


def _serving_sites(fleet: Fleet) -> dict[str, list[int]]:
    """Site indexes holding a node of each model."""
    index = {s.name: i for i, s in enumerate(fleet.sites)}
    out: dict[str, list[int]] = {}
    for node in fleet.nodes:
        for model in node["models"]:
            out.setdefault(model, []).append(index[node["site"]])
    return out


def connect_sources(
    fleet: Fleet,
    distances: np.ndarray,
    sources: list[dict[str, Any]],
    residency: dict[int, str | None],
) -> None:
    """Every source reaches, by a direct link (docs/contracts.md §1 routes only over links),
    some node of every workload model, inside its residency jurisdiction when it has one: a
    missing one gets a backhaul link to the nearest such site. A residency no node of the
    jurisdiction can meet for some model is dropped."""
    index = {s.name: i for i, s in enumerate(fleet.sites)}
    serving = _serving_sites(fleet)
    linked: dict[int, set[int]] = {i: {i} for i in range(len(fleet.sites))}
    for a, b in fleet.links:
        linked[a].add(b)
        linked[b].add(a)
    for source in sources:
        i = index[source["site"]]
        jurisdiction = residency.get(i)
        if jurisdiction is not None and any(
            not any(fleet.sites[j].jurisdiction == jurisdiction for j in sites)
            for sites in serving.values()
        ):
            residency[i] = jurisdiction = None
        for sites in serving.values():
            allowed = [
                j
                for j in sites
                if jurisdiction is None or fleet.sites[j].jurisdiction == jurisdiction
            ]
            if linked[i].isdisjoint(allowed):
                j = min(allowed, key=lambda k: (float(distances[i, k]), k))
                add_link(fleet, i, j, float(distances[i, j]))
                linked[i].add(j)
                linked[j].add(i)


def draw_sources(
    rng: np.random.Generator, fleet: Fleet, per_site: np.ndarray
) -> tuple[list[dict[str, Any]], dict[int, str | None]]:
    """Users at every device and edge site, batch jobs at some core sites, and a source at
    every site without nodes (a site exists to hold compute or to originate requests)."""
    sources: list[dict[str, Any]] = []
    residency: dict[int, str | None] = {}
    for i, site in enumerate(fleet.sites):
        core = site.tier in CORE_TIERS
        if (
            core
            and per_site[i] > 0
            and rng.random() >= 0.3
            and (sources or i < len(fleet.sites) - 1)
        ):
            continue
        weight = SOURCE_TIER_WEIGHT[site.tier] * site.weight * float(rng.lognormal(0.0, 0.5))
        wants = RESIDENCY_PROBABILITY.get(site.jurisdiction, OTHER_RESIDENCY_PROBABILITY)
        residency[i] = site.jurisdiction if rng.random() < wants else None
        sources.append(
            {
                "name": f"{site.name}-{'batch' if core else 'app'}",
                "site": site.name,
                "share": weight,
                "slo": "batch" if core else "interactive",
            }
        )
    total = sum(s["share"] for s in sources)
    for s in sources:
        s["share"] = max(round(s["share"] / total, 4), 0.0001)
    return sources, residency


def _full_batch_cost(request: PlacementRequest, node: NodeView, topology: Topology) -> float:
    """USD of `request` on `node` sharing full decode batches (docs/contracts.md §1 cost): a
    budget must be attainable when the node is busy, which is when batches are full."""
    route = topology.routes[(request.source_site, node.site)]
    step = decode_step_s(node, node.max_batch) / node.max_batch
    busy = request.prompt_tokens / node.prefill_tokens_per_s
    busy += (request.max_output_tokens - 1) * step
    egress = PROMPT_BYTES_PER_TOKEN * request.prompt_tokens * route.egress_usd_per_byte
    return node.usd_per_hour / 3600.0 * busy + egress


def _best_unloaded(topology: Topology, source_name: str) -> tuple[float, float, float]:
    """The worst, over the workload's models, of the best unloaded (TTFT s, E2E s, USD) the
    source can get for the reference request from the nodes its SLO allows."""
    source = topology.source_by_name[source_name]
    worst = (0.0, 0.0, 0.0)
    for model, _ in topology.model_shares():
        request = placement_request(
            topology,
            model=model,
            source_site=source.site,
            slo=source.slo,
            prompt_tokens=REFERENCE_PROMPT_TOKENS,
            max_output_tokens=REFERENCE_OUTPUT_TOKENS,
        )
        views: list[NodeView] = [node_view(topology, n.name, model) for n in topology.nodes]
        candidates, _ = filter_candidates(request, views, topology)
        if not candidates:
            raise AssertionError(f"source {source_name} reaches no node serving {model}")
        est = estimate(request, candidates, topology)
        cost = min(_full_batch_cost(request, c, topology) for c in candidates)
        best = (float(est.ttft_s.min()), float(est.e2e_s.min()), cost)
        worst = (max(worst[0], best[0]), max(worst[1], best[1]), max(worst[2], best[2]))
    return worst


def attainable_slos(topology: Topology) -> list[dict[str, Any]]:
    """Each SLO's targets raised, where needed, to SLO_HEADROOM times what its hardest
    source can reach unloaded (rounded up to 100 ms and 0.1 USD)."""
    slos = []
    for slo in topology.slos:
        need = [_best_unloaded(topology, s.name) for s in topology.sources if s.slo == slo.name]
        entry = slo.model_dump(exclude_none=True)
        for key, i, unit in (("ttft_p95_ms", 0, 1000.0), ("e2e_p95_ms", 1, 1000.0)):
            floor = max((n[i] for n in need), default=0.0) * unit * SLO_HEADROOM
            entry[key] = max(entry[key], math.ceil(floor / 100.0) * 100.0)
        if "max_usd_per_1k" in entry:
            floor = max((n[2] for n in need), default=0.0) * 1000.0 * SLO_HEADROOM
            entry["max_usd_per_1k"] = max(entry["max_usd_per_1k"], math.ceil(floor * 10) / 10)
        slos.append(entry)
    return slos
