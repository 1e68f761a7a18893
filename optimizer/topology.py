"""Topologies (docs/contracts.md §1): the schema of a fleet description and its queries.

The schema is declared with pydantic (field types, bounds, unknown keys); cross-references
(unique names, missing names, self-links, models that do not fit in memory) are checked after
(`topology_checks.py`); files are read and written by `topology_files.py`. The entries (sites,
nodes, ...) are declared in `topology_entries.py` and named here too, as parts of the schema.
Every problem is reported at once, each naming the file, the entry and the field, and a file
with any problem yields no Topology at all, so an importer never sees half a fleet.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal, NamedTuple

from pydantic import ConfigDict, Field, model_validator

from optimizer.topology_checks import reference_problems
from optimizer.topology_entries import (
    GIB,
    MAX_GPUS,
    MAX_MEMORY_GIB,
    MAX_SHARE,
    NODE_STATES,
    TIERS,
    Accelerator,
    Entry,
    Link,
    Model,
    ModelShare,
    Node,
    NodeRole,
    NodeState,
    Profile,
    Site,
    Slo,
    Source,
    Tier,
    Workload,
    node_kv_capacity_bytes,
    parse_address,
)

__all__ = [
    "Accelerator",
    "DEFAULT_INTRA_SITE_RTT_MS",
    "GIB",
    "Link",
    "MAX_GPUS",
    "MAX_MEMORY_GIB",
    "MAX_SHARE",
    "Model",
    "ModelShare",
    "NODE_STATES",
    "Node",
    "NodeRole",
    "NodeState",
    "Profile",
    "Route",
    "Site",
    "Slo",
    "Source",
    "TIERS",
    "Tier",
    "Topology",
    "Workload",
    "node_kv_capacity_bytes",
    "parse_address",
]

DEFAULT_INTRA_SITE_RTT_MS = 0.5


class Route(NamedTuple):
    """Network terms between two sites; intra-site routes move bytes for free
    (docs/contracts.md §1)."""

    rtt_s: float
    s_per_byte: float
    egress_usd_per_byte: float


class Topology(Entry):
    """A whole fleet: the parsed and cross-checked contents of one topology file."""

    version: Literal[1]
    sites: tuple[Site, ...] = Field(min_length=1)
    links: tuple[Link, ...] = ()
    intra_site_rtt_ms: float = Field(default=DEFAULT_INTRA_SITE_RTT_MS, ge=0)
    accelerators: tuple[Accelerator, ...] = Field(min_length=1)
    models: tuple[Model, ...] = Field(min_length=1)
    profiles: tuple[Profile, ...] = Field(min_length=1)
    nodes: tuple[Node, ...] = Field(min_length=1)
    sources: tuple[Source, ...] = ()
    slos: tuple[Slo, ...] = ()
    workload: Workload | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, ignored_types=(cached_property,))

    @model_validator(mode="after")
    def _cross_references(self) -> Topology:
        problems = list(reference_problems(self))
        if problems:
            raise ValueError("\n".join(problems))
        return self

    # -- lookups ---------------------------------------------------------------------------
    @cached_property
    def site_by_name(self) -> dict[str, Site]:
        return {s.name: s for s in self.sites}

    @cached_property
    def node_by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def model_by_name(self) -> dict[str, Model]:
        return {m.name: m for m in self.models}

    @cached_property
    def accelerator_by_name(self) -> dict[str, Accelerator]:
        return {a.name: a for a in self.accelerators}

    @cached_property
    def source_by_name(self) -> dict[str, Source]:
        return {s.name: s for s in self.sources}

    @cached_property
    def slo_by_name(self) -> dict[str, Slo]:
        return {s.name: s for s in self.slos}

    @cached_property
    def profile_by_key(self) -> dict[tuple[str, str], Profile]:
        return {(p.model, p.accelerator): p for p in self.profiles}

    @cached_property
    def _link_by_pair(self) -> dict[frozenset[str], Link]:
        return {frozenset((link.a, link.b)): link for link in self.links}

    @cached_property
    def routes(self) -> dict[tuple[str, str], Route]:
        """Every reachable ordered (source site, node site) pair with its network terms.

        Precomputed because the simulator and the decision engine look routes up for every
        candidate of every request; a missing pair is unreachable."""
        routes: dict[tuple[str, str], Route] = {}
        for site in self.sites:
            routes[(site.name, site.name)] = Route(self.intra_site_rtt_ms / 1000.0, 0.0, 0.0)
        for lk in self.links:
            # Gbit/s to bytes/s; egress is billed per decimal GB as cloud providers do.
            route = Route(
                lk.rtt_ms / 1000.0, 8.0 / (lk.bandwidth_gbps * 1e9), lk.egress_usd_per_gb / 1e9
            )
            routes[(lk.a, lk.b)] = route
            routes[(lk.b, lk.a)] = route
        return routes

    def link(self, site_a: str, site_b: str) -> Link | None:
        """The link joining two different sites, or None when they are unreachable."""
        return self._link_by_pair.get(frozenset((site_a, site_b)))

    def rtt_ms(self, site_a: str, site_b: str) -> float | None:
        """Round-trip time between sites; None means unreachable (no link)."""
        if site_a == site_b:
            return self.intra_site_rtt_ms
        link = self.link(site_a, site_b)
        return None if link is None else link.rtt_ms

    def profile(self, model: str, accelerator: str) -> Profile:
        return self.profile_by_key[(model, accelerator)]

    def kv_capacity_bytes(self, node: Node) -> int:
        """KV room: node memory left after the weights of every model it serves
        (docs/contracts.md §1)."""
        return node_kv_capacity_bytes(node, self.accelerator_by_name, self.model_by_name)

    def model_shares(self) -> list[tuple[str, float]]:
        """The workload mix; without one, every served model is equally likely."""
        if self.workload is not None:
            return [(m.name, m.share) for m in self.workload.models]
        served = sorted({m for n in self.nodes for m in n.models})
        return [(name, 1.0) for name in served]

    # -- serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The file form: defaults of the console's extensions are left out, so a dump of a
        contract-only file is a contract-only file."""
        data = self.model_dump(mode="json", exclude_none=True)
        for node in data["nodes"]:
            for key, default in (("state", "active"), ("labels", {}), ("exporters", [])):
                if node.get(key) == default:
                    node.pop(key)
        if not data["sources"]:
            data.pop("sources")
        if not data["slos"]:
            data.pop("slos")
        if not data["links"]:
            data.pop("links")
        return data
