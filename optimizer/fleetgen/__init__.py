"""`python -m optimizer gen-fleet`: valid, realistic topologies of any size (docs/contracts.md §5).

A generated fleet is deterministic for its seed. How it is drawn (docs/learned-policy.md has
the full account):

- Sites are placed at real metro coordinates (`METROS`, jittered by up to ~40 km when a metro
  holds several sites), each with a tier, region and jurisdiction. Devices and edges are where
  users are; regional and cloud sites are the core.
- Links: RTT from the great-circle distance, `rtt_ms = ACCESS_MS[tiers] + ROUTE_FACTOR * 2 *
  d / FIBRE_KM_PER_MS`. Light in silica fibre travels at c / 1.47 ~ 204 km per ms, which is
  the field's rule of thumb of about 1 ms of RTT per 100 km (ITU-T G.Sup39, §8.2 "fibre
  propagation delay ~ 5 us/km"); fibre routes are longer than the great circle, hence
  `ROUTE_FACTOR` (our assumption, chosen so Frankfurt-Ashburn comes out at the 85-90 ms that
  `fleet-demo.yaml` uses). Bandwidth and egress follow the tiers of the two ends (egress as
  in cloud providers' inter-region and internet transfer price lists, 0.01-0.09 USD/GB).
- Accelerators, models and profiles are `fleet-demo.yaml`'s catalogue (real memory sizes,
  speeds in the range of public vLLM benchmarks); prices are its list prices with a +-15%
  regional spread.
- SLOs are made attainable: each target is at least twice the best unloaded TTFT and E2E
  (by `optimizer.estimates`, the engine's own estimates) that any source holding it can reach
  for a long reference prompt, for every model of the workload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from optimizer.fleetgen.demand import (
    BATCH,
    INTERACTIVE,
    attainable_slos,
    connect_sources,
    draw_sources,
)
from optimizer.fleetgen.geography import Fleet, distances_km, draw_links, draw_sites
from optimizer.fleetgen.hardware import LARGE_MODEL, draw_node, gpu_prices, nodes_per_site
from optimizer.topology import Topology
from optimizer.topology_files import dump_topology, load_topology, parse_topology

CATALOGUE = Path(__file__).resolve().parents[1] / "topologies" / "fleet-demo.yaml"
MAX_NODES = 20_000
MAX_SITES = 2_000  # nearest-neighbour links take S x S distances
MIN_SLO_SCALE, MAX_SLO_SCALE = 0.05, 20.0


class FleetSpecError(ValueError):
    """Arguments that cannot describe a fleet."""


def generate_fleet(nodes: int, sites: int, seed: int, slo_scale: float = 1.0) -> Topology:
    """A valid fleet of `nodes` nodes over `sites` sites, the same for the same arguments.

    `slo_scale` multiplies the SLO classes' latency targets before they are raised to what the
    fleet can attain (`attainable_slos`), so the same nodes can be drawn with tight SLOs: real
    chat SLOs are tighter than the classes' defaults (the held-out suite's hand-written fleets
    ask 30 s E2E where these ask 60 s), and a policy trained where E2E never binds learns to
    ignore it. It takes no draw, so a fleet's nodes, links and sources do not depend on it."""
    if not 1 <= nodes <= MAX_NODES:
        raise FleetSpecError(f"--nodes must be between 1 and {MAX_NODES}, got {nodes}")
    if not 1 <= sites <= MAX_SITES:
        raise FleetSpecError(f"--sites must be between 1 and {MAX_SITES}, got {sites}")
    if not MIN_SLO_SCALE <= slo_scale <= MAX_SLO_SCALE:
        raise FleetSpecError(
            f"--slo-scale must be between {MIN_SLO_SCALE:g} and {MAX_SLO_SCALE:g}, "
            f"got {slo_scale:g}"
        )
    catalogue = load_topology(CATALOGUE)
    rng = np.random.default_rng(seed)
    fleet = Fleet(draw_sites(rng, sites))
    distances = distances_km(fleet.sites)
    per_site = nodes_per_site(rng, fleet.sites, nodes)
    price = gpu_prices(catalogue)
    for i, site in enumerate(fleet.sites):
        for k in range(int(per_site[i])):
            fleet.nodes.append(draw_node(rng, site, k + 1, catalogue, price))
    draw_links(fleet, distances)
    sources, residency = draw_sources(rng, fleet, per_site)
    connect_sources(fleet, distances, sources, residency)
    index = {s.name: i for i, s in enumerate(fleet.sites)}
    slo_names = set()
    for source in sources:
        jurisdiction = residency.get(index[source["site"]])
        if jurisdiction is not None:
            source["slo"] = f"{source['slo']}-{jurisdiction.lower()}"
        slo_names.add((source["slo"], jurisdiction))
    slos = [
        {"name": name, **_scaled(BATCH if name.startswith("batch") else INTERACTIVE, slo_scale)}
        | ({"residency": jurisdiction} if jurisdiction else {})
        for name, jurisdiction in sorted(slo_names)
    ]
    served = sorted({m for node in fleet.nodes for m in node["models"]})
    shares = {
        m: float(rng.uniform(0.05, 0.25) if m == LARGE_MODEL else rng.uniform(0.3, 1.0))
        for m in served
    }
    total = sum(shares.values())
    data: dict[str, Any] = {
        "version": 1,
        "sites": [
            {"name": s.name, "tier": s.tier, "region": s.region, "jurisdiction": s.jurisdiction}
            for s in fleet.sites
        ],
        "links": [fleet.links[key] for key in sorted(fleet.links)],
        "accelerators": [a.model_dump() for a in catalogue.accelerators],
        "models": [m.model_dump() for m in catalogue.models],
        "profiles": [p.model_dump() for p in catalogue.profiles],
        "nodes": fleet.nodes,
        "sources": sources,
        "slos": slos,
        "workload": {
            "models": [
                {"name": m, "share": max(round(shares[m] / total, 3), 0.001)} for m in served
            ]
        },
    }
    draft = parse_topology(dump_topology(Topology.model_validate(data)), "<generated>")
    data["slos"] = attainable_slos(draft)
    return Topology.model_validate(data)


def _scaled(targets: dict[str, float], scale: float) -> dict[str, float]:
    """An SLO class's targets with its latencies times `scale` (its budget unchanged)."""
    return {k: v * scale if k.endswith("_ms") else v for k, v in targets.items()}


def fleet_yaml(
    topology: Topology, nodes: int, sites: int, seed: int, slo_scale: float = 1.0
) -> str:
    """The file text: a header saying how it was made, then the topology."""
    scale = "" if slo_scale == 1.0 else f" --slo-scale {slo_scale:g}"
    header = (
        f"# Generated by `python -m optimizer gen-fleet --nodes {nodes} --sites {sites} "
        f"--seed {seed}{scale}`\n"
        "# (optimizer/fleetgen; docs/learned-policy.md describes the model).\n"
    )
    return header + dump_topology(topology)
