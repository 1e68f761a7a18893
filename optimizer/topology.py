"""Topologies (docs/contracts.md §1): the schema of a fleet description and its queries.

The schema is declared with pydantic (field types, bounds, unknown keys); cross-references
(unique names, missing names, self-links, models that do not fit in memory) are checked after
(`topology_checks.py`); files are read and written by `topology_files.py`.
Every problem is reported at once, each naming the file, the entry and the field, and a file
with any problem yields no Topology at all, so an importer never sees half a fleet.
"""

from __future__ import annotations

import ipaddress
from functools import cached_property
from typing import Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

GIB = 1024**3
Tier = Literal["device", "edge", "regional", "cloud"]
NodeRole = Literal["mixed", "prefill", "decode"]
NodeState = Literal["active", "cordoned", "draining", "down"]
TIERS: tuple[str, ...] = ("device", "edge", "regional", "cloud")
NODE_STATES: tuple[str, ...] = ("active", "cordoned", "draining", "down")
DEFAULT_INTRA_SITE_RTT_MS = 0.5


class Route(NamedTuple):
    """Network terms between two sites; intra-site routes move bytes for free
    (docs/contracts.md §1)."""

    rtt_s: float
    s_per_byte: float
    egress_usd_per_byte: float


# The largest source or workload share: shares are relative weights, and a bound keeps their
# sum finite (1.7e308 twice is infinity, which made every evaluation's draw fail).
MAX_SHARE = 1_000_000.0
# Memory per accelerator or model, and accelerators per node: bounds far above any hardware
# (the largest accelerators hold a few hundred GiB), so that a node's memory in bytes is always
# a finite number (1.7e308 GiB made the KV capacity an infinity, and the import a 500).
MAX_MEMORY_GIB = 1_000_000.0
MAX_GPUS = 100_000


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, tuple | list):
        return any(_holds_nul(v) for v in value)
    return False


class _Entry(BaseModel):
    # YAML's .inf and .nan are floats too: no fleet has infinite prices or latencies.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # YAML's "\0" escape makes a NUL character, which no database text column stores.
        if _holds_nul(value):
            raise ValueError("must not contain the NUL character (U+0000)")
        return value


class Site(_Entry):
    name: str = Field(min_length=1)
    tier: Tier
    region: str = Field(min_length=1)
    jurisdiction: str = Field(min_length=1)


class Link(_Entry):
    a: str
    b: str
    rtt_ms: float = Field(ge=0)
    bandwidth_gbps: float = Field(gt=0)
    egress_usd_per_gb: float = Field(default=0.0, ge=0)


class Accelerator(_Entry):
    name: str = Field(min_length=1)
    memory_gib: float = Field(gt=0, le=MAX_MEMORY_GIB)


class Model(_Entry):
    name: str = Field(min_length=1)
    memory_gib: float = Field(ge=0, le=MAX_MEMORY_GIB)
    kv_bytes_per_token: int = Field(gt=0)


class Profile(_Entry):
    model: str
    accelerator: str
    prefill_tokens_per_s: float = Field(gt=0)
    decode_step_ms: float = Field(gt=0)
    decode_step_ms_per_seq: float = Field(ge=0)
    max_batch: int = Field(gt=0)


class Node(_Entry):
    name: str = Field(min_length=1)
    site: str
    accelerator: str
    gpus: int = Field(default=1, gt=0, le=MAX_GPUS)
    usd_per_hour: float = Field(ge=0)
    models: tuple[str, ...] = Field(min_length=1)
    role: NodeRole = "mixed"
    # Console extensions (docs/contracts.md §1 allows additions): operational state, labels and the
    # exporter URLs the telemetry pipeline scrapes. Omitted from dumps when at their defaults.
    state: NodeState = "active"
    labels: dict[str, str] = Field(default_factory=dict)
    exporters: tuple[str, ...] = ()
    # The serving endpoint a gateway sends this node's requests to (docs/contracts.md §5):
    # the `ip:port` an Envoy ORIGINAL_DST cluster connects to, so a literal IP, not a name.
    address: str | None = None

    @field_validator("address")
    @classmethod
    def _ip_and_port(cls, value: str | None) -> str | None:
        return None if value is None else parse_address(value)


class Source(_Entry):
    name: str = Field(min_length=1)
    site: str
    share: float = Field(gt=0, le=MAX_SHARE)
    slo: str


class Slo(_Entry):
    name: str = Field(min_length=1)
    ttft_p95_ms: float = Field(gt=0)
    e2e_p95_ms: float = Field(gt=0)
    residency: str | None = None
    max_usd_per_1k: float | None = Field(default=None, ge=0)
    max_error_rate: float | None = Field(default=None, ge=0, le=1)


class ModelShare(_Entry):
    name: str
    share: float = Field(gt=0, le=MAX_SHARE)


class Workload(_Entry):
    models: tuple[ModelShare, ...] = Field(min_length=1)


class Topology(_Entry):
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
        from optimizer.topology_checks import reference_problems  # it reads these classes

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


def parse_address(value: str) -> str:
    """`value` as a canonical `ip:port` (IPv6 in brackets, as Envoy writes it), or ValueError.

    Envoy's ORIGINAL_DST cluster reads the endpoint header as an IP address and port
    (envoyproxy.io, "Original destination" load balancing, `use_http_header`), so host
    names are refused here rather than failing at the gateway."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{value!r} is not ip:port (port 1-65535)")
    bracketed = host.startswith("[") and host.endswith("]")
    try:
        ip = ipaddress.ip_address(host[1:-1] if bracketed else host)
    except ValueError:
        raise ValueError(f"{value!r} is not ip:port: {host!r} is not an IP address") from None
    if ip.version == 6 and not bracketed:
        raise ValueError(f"{value!r}: write an IPv6 address in brackets, [addr]:port")
    return f"[{ip}]:{int(port)}" if ip.version == 6 else f"{ip}:{int(port)}"


def node_kv_capacity_bytes(
    node: Node, accelerators: dict[str, Accelerator], models: dict[str, Model]
) -> int:
    total = node.gpus * accelerators[node.accelerator].memory_gib
    weights = sum(models[m].memory_gib for m in node.models)
    return int((total - weights) * GIB)
