"""The entries of a topology (docs/contracts.md §1), one class per list of the file, each
checked on its own: field types, bounds, unknown keys, NUL characters. The whole fleet and its
cross-entry checks are `topology.py` and `topology_checks.py`, which read these."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

GIB = 1024**3
Tier = Literal["device", "edge", "regional", "cloud"]
NodeRole = Literal["mixed", "prefill", "decode"]
NodeState = Literal["active", "cordoned", "draining", "down"]
TIERS: tuple[str, ...] = ("device", "edge", "regional", "cloud")
NODE_STATES: tuple[str, ...] = ("active", "cordoned", "draining", "down")
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


class Entry(BaseModel):
    """What every entry, and the whole topology, has in common: frozen, no unknown keys, no
    infinities or NaN, no NUL characters."""

    # YAML's .inf and .nan are floats too: no fleet has infinite prices or latencies.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # YAML's "\0" escape makes a NUL character, which no database text column stores.
        if _holds_nul(value):
            raise ValueError("must not contain the NUL character (U+0000)")
        return value


class Site(Entry):
    name: str = Field(min_length=1)
    tier: Tier
    region: str = Field(min_length=1)
    jurisdiction: str = Field(min_length=1)


class Link(Entry):
    a: str
    b: str
    rtt_ms: float = Field(ge=0)
    bandwidth_gbps: float = Field(gt=0)
    egress_usd_per_gb: float = Field(default=0.0, ge=0)


class Accelerator(Entry):
    name: str = Field(min_length=1)
    memory_gib: float = Field(gt=0, le=MAX_MEMORY_GIB)


class Model(Entry):
    name: str = Field(min_length=1)
    memory_gib: float = Field(ge=0, le=MAX_MEMORY_GIB)
    kv_bytes_per_token: int = Field(gt=0)


class Profile(Entry):
    model: str
    accelerator: str
    prefill_tokens_per_s: float = Field(gt=0)
    decode_step_ms: float = Field(gt=0)
    decode_step_ms_per_seq: float = Field(ge=0)
    max_batch: int = Field(gt=0)


class Node(Entry):
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


class Source(Entry):
    name: str = Field(min_length=1)
    site: str
    share: float = Field(gt=0, le=MAX_SHARE)
    slo: str


class Slo(Entry):
    name: str = Field(min_length=1)
    ttft_p95_ms: float = Field(gt=0)
    e2e_p95_ms: float = Field(gt=0)
    residency: str | None = None
    max_usd_per_1k: float | None = Field(default=None, ge=0)
    max_error_rate: float | None = Field(default=None, ge=0, le=1)


class ModelShare(Entry):
    name: str
    share: float = Field(gt=0, le=MAX_SHARE)


class Workload(Entry):
    models: tuple[ModelShare, ...] = Field(min_length=1)


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
