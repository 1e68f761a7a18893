"""Where a generated fleet is: sites at real metro coordinates, and links between them whose
RTT follows the great-circle distance (the package docstring gives the formula and sources)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

EARTH_RADIUS_KM = 6371.0
FIBRE_KM_PER_MS = 200.0  # ITU-T G.114 (05/2003) Table 1: optical fibre, 5 us/km one way
ROUTE_FACTOR = (
    1.3  # fibre path length over great-circle distance (an assumption, see the package docstring)
)
# Last mile and in-site switching, added once per link end by its tier (ms).
ACCESS_MS = {"device": 1.5, "edge": 0.5, "regional": 0.25, "cloud": 0.25}
CORE_TIERS = ("regional", "cloud")
# Links drawn per site, to its nearest sites of each kind.
CORE_NEIGHBOURS = 5
EDGE_TO_CORE = 2
EDGE_TO_EDGE = 2
EDGE_PEERING_KM = 1500.0  # edges peer with nearby edges only (metro and regional networks)

# (code, lat, lon, region, jurisdiction, weight): metros where fleets are, weighted by market.
METROS: tuple[tuple[str, float, float, str, str, float], ...] = (
    ("fra", 50.11, 8.68, "eu-central", "EU", 3.0),
    ("muc", 48.14, 11.58, "eu-central", "EU", 1.5),
    ("ams", 52.37, 4.90, "eu-west", "EU", 2.0),
    ("par", 48.86, 2.35, "eu-west", "EU", 2.0),
    ("dub", 53.35, -6.26, "eu-west", "EU", 1.0),
    ("mad", 40.42, -3.70, "eu-south", "EU", 1.0),
    ("mil", 45.46, 9.19, "eu-south", "EU", 1.0),
    ("sto", 59.33, 18.07, "eu-north", "EU", 1.0),
    ("waw", 52.23, 21.01, "eu-central", "EU", 1.0),
    ("lon", 51.51, -0.13, "uk-south", "UK", 2.0),
    ("ash", 39.04, -77.49, "us-east", "US", 3.0),
    ("nyc", 40.71, -74.01, "us-east", "US", 2.0),
    ("atl", 33.75, -84.39, "us-east", "US", 1.0),
    ("chi", 41.88, -87.63, "us-central", "US", 1.5),
    ("dfw", 32.78, -96.80, "us-central", "US", 1.5),
    ("sjc", 37.34, -121.89, "us-west", "US", 2.0),
    ("sea", 47.61, -122.33, "us-west", "US", 1.0),
    ("lax", 34.05, -118.24, "us-west", "US", 1.0),
    ("tor", 43.65, -79.38, "ca-central", "CA", 1.0),
    ("tyo", 35.68, 139.69, "ap-northeast", "JP", 1.5),
    ("sin", 1.35, 103.82, "ap-southeast", "SG", 1.5),
    ("bom", 19.08, 72.88, "ap-south", "IN", 1.0),
    ("syd", -33.87, 151.21, "ap-southeast-2", "AU", 1.0),
    ("gru", -23.55, -46.63, "sa-east", "BR", 0.7),
)
TIER_WEIGHTS = {"device": 0.25, "edge": 0.35, "regional": 0.25, "cloud": 0.15}


@dataclass(frozen=True)
class Site:
    """A drawn site: where it is and how big its metro's market is (`weight`)."""

    name: str
    tier: str
    region: str
    jurisdiction: str
    lat: float
    lon: float
    weight: float


@dataclass
class Fleet:
    """The fleet being drawn: sites, node entries and links keyed by (site index, site index)."""

    sites: list[Site]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    links: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)


def distances_km(sites: list[Site]) -> np.ndarray:
    """Great-circle (haversine) distances between every pair of sites, on a spherical Earth."""
    lat = np.radians([s.lat for s in sites])
    lon = np.radians([s.lon for s in sites])
    dlat = lat[:, None] - lat[None, :]
    dlon = lon[:, None] - lon[None, :]
    h = np.sin(dlat / 2) ** 2 + np.cos(lat)[:, None] * np.cos(lat)[None, :] * np.sin(dlon / 2) ** 2
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.minimum(1.0, np.sqrt(h)))


def link_rtt_ms(tier_a: str, tier_b: str, distance_km: float) -> float:
    """Round trip over fibre: 2 x route length / speed in fibre, plus access at both ends."""
    propagation = 2 * ROUTE_FACTOR * distance_km / FIBRE_KM_PER_MS
    return round(ACCESS_MS[tier_a] + ACCESS_MS[tier_b] + propagation, 1)


def link_terms(a: Site, b: Site) -> tuple[float, float]:
    """(Gbit/s, egress USD/GB) by the tiers at the ends: device uplinks are 1 Gbit/s and
    private; core backbones 100 Gbit/s; egress 0.01-0.02 USD/GB inside a jurisdiction and
    0.05 across one (cloud inter-region and internet transfer price lists)."""
    if "device" in (a.tier, b.tier):
        return 1.0, 0.0
    same = a.jurisdiction == b.jurisdiction
    if a.tier in CORE_TIERS and b.tier in CORE_TIERS:
        return 100.0, 0.02 if same else 0.05
    return 10.0, 0.01 if same else 0.05


def draw_sites(rng: np.random.Generator, count: int) -> list[Site]:
    weights = np.array([m[5] for m in METROS])
    metros = rng.choice(len(METROS), size=count, p=weights / weights.sum())
    tiers = list(TIER_WEIGHTS)
    drawn = rng.choice(len(tiers), size=count, p=list(TIER_WEIGHTS.values()))
    # The first site is core, so every fleet has somewhere to put its big nodes.
    drawn[0] = tiers.index("cloud" if rng.random() < 0.5 else "regional")
    seen: dict[tuple[str, str], int] = {}
    sites = []
    for metro, tier_index in zip(metros, drawn, strict=True):
        code, lat, lon, region, jurisdiction, weight = METROS[int(metro)]
        tier = tiers[int(tier_index)]
        k = seen[(code, tier)] = seen.get((code, tier), 0) + 1
        # Further sites of one metro lie up to ~0.35 degrees (~40 km) from its centre.
        dlat, dlon = (0.0, 0.0) if k == 1 else rng.uniform(-0.35, 0.35, size=2)
        size = weight * float(rng.lognormal(0.0, 0.5))
        sites.append(
            Site(f"{code}-{tier}-{k}", tier, region, jurisdiction, lat + dlat, lon + dlon, size)
        )
    return sites


def add_link(fleet: Fleet, i: int, j: int, distance_km: float) -> None:
    if i == j:
        return
    key = (min(i, j), max(i, j))
    if key in fleet.links:
        return
    a, b = fleet.sites[key[0]], fleet.sites[key[1]]
    gbps, egress = link_terms(a, b)
    fleet.links[key] = {
        "a": a.name,
        "b": b.name,
        "rtt_ms": link_rtt_ms(a.tier, b.tier, distance_km),
        "bandwidth_gbps": gbps,
        "egress_usd_per_gb": egress,
    }


def _nearest(distances: np.ndarray, i: int, among: np.ndarray, k: int) -> list[int]:
    others = among[among != i]
    order = np.argsort(distances[i, others], kind="stable")[:k]
    return [int(x) for x in others[order]]


def draw_links(fleet: Fleet, distances: np.ndarray) -> None:
    """A realistic mesh: core sites to their nearest core sites, edges to the nearest core
    and edge sites, devices to the nearest edge and core site."""
    tiers = np.array([s.tier for s in fleet.sites])
    core = np.flatnonzero(np.isin(tiers, CORE_TIERS))
    edges = np.flatnonzero(tiers == "edge")
    for i, site in enumerate(fleet.sites):
        wanted: list[int] = []
        if site.tier in CORE_TIERS:
            wanted = _nearest(distances, i, core, CORE_NEIGHBOURS)
        elif site.tier == "edge":
            wanted = _nearest(distances, i, core, EDGE_TO_CORE)
            wanted += [
                j
                for j in _nearest(distances, i, edges, EDGE_TO_EDGE)
                if distances[i, j] <= EDGE_PEERING_KM
            ]
        else:
            wanted = _nearest(distances, i, edges, 1) + _nearest(distances, i, core, 1)
        for j in wanted:
            add_link(fleet, i, j, float(distances[i, j]))
