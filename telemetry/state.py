"""Each node's latest canonical values, with the time each was observed, in the shared store.

Layout (under the store prefix): `node:{name}` a hash of field -> "value|epoch seconds";
`nodes` the set of node names seen; `prev:{name}` the previous cumulative counter and
histogram values (for rates); `fresh` a hash of node -> "1"/"0" (the last announced freshness).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from console.outage import OutageLog
from telemetry import conf
from telemetry.mapping.base import CANONICAL_FIELDS
from telemetry.mapping.derive import Prev
from telemetry.store import StoreError, get_store

logger = logging.getLogger(__name__)
# One warning per outage of the store (Redis), whichever caller meets it first.
store_outage = OutageLog("telemetry state store", logger)
SEEN = "_seen"  # pseudo-field: when the node last reported anything, mapped or not


@dataclass(frozen=True)
class NodeTelemetry:
    """A node's latest telemetry, in canonical units. None = never reported.

    kv_usage, prefix_hit_rate, gpu_util and cpu_util are fractions 0..1; memory in bytes;
    TTFT and end-to-end latency in seconds; power in watts. `observed_at` holds the time of
    each field's value (exporters report at different times); `updated_at` is the newest.
    """

    node: str
    updated_at: datetime
    queue_depth: float | None = None
    running: float | None = None
    kv_usage: float | None = None
    prefix_hit_rate: float | None = None
    gpu_util: float | None = None
    gpu_mem_used_bytes: float | None = None
    gpu_mem_total_bytes: float | None = None
    ttft_p50_s: float | None = None
    ttft_p95_s: float | None = None
    e2e_p95_s: float | None = None
    gen_tokens_per_s: float | None = None
    power_w: float | None = None
    cpu_util: float | None = None
    mem_available_bytes: float | None = None
    mem_total_bytes: float | None = None
    load1: float | None = None
    observed_at: Mapping[str, datetime] = field(default_factory=dict)

    def age_s(self, now: datetime | None = None) -> float:
        """Seconds since the newest value (never negative)."""
        now = now or datetime.now(UTC)
        return max(0.0, (now - self.updated_at).total_seconds())

    def is_stale(self, now: datetime | None = None, bound_s: float | None = None) -> bool:
        """Older than LOCUS_TELEMETRY_STALE_SECONDS (or `bound_s`)."""
        bound = conf.stale_seconds() if bound_s is None else bound_s
        return self.age_s(now) > bound

    def to_dict(self, now: datetime | None = None) -> dict[str, object]:
        data = asdict(self)
        data["updated_at"] = self.updated_at.isoformat()
        data["observed_at"] = {k: v.isoformat() for k, v in self.observed_at.items()}
        data["age_s"] = round(self.age_s(now), 3)
        data["stale"] = self.is_stale(now)
        return data


def _key(kind: str, node: str = "") -> str:
    prefix = get_store().prefix
    return f"{prefix}:{kind}:{node}" if node else f"{prefix}:{kind}"


def _decode(node: str, raw: dict[str, str]) -> NodeTelemetry | None:
    values: dict[str, float] = {}
    observed: dict[str, datetime] = {}
    seen: datetime | None = None
    for name, text in raw.items():
        value, _, stamp = text.partition("|")
        when = datetime.fromtimestamp(float(stamp), tz=UTC)
        if name == SEEN:
            seen = when
        elif name in CANONICAL_FIELDS:
            values[name] = float(value)
            observed[name] = when
    newest = max([*observed.values(), *([seen] if seen else [])], default=None)
    if newest is None:
        return None
    return NodeTelemetry(node=node, updated_at=newest, observed_at=observed, **values)


def read_nodes(nodes: Iterable[str] | None = None) -> dict[str, NodeTelemetry]:
    """Latest state of the given nodes (default: every node ever seen); {} if the store fails."""
    store = get_store()
    try:
        names = sorted(store.smembers(_key("nodes")) if nodes is None else set(nodes))
        raws = store.hgetall_many([_key("node", n) for n in names])
    except StoreError:
        store_outage.failed("reads answer nothing")
        return {}
    store_outage.recovered()
    decoded = {n: _decode(n, raw) for n, raw in zip(names, raws, strict=True)}
    return {n: t for n, t in decoded.items() if t is not None}


def write_many(
    latest: dict[str, dict[str, tuple[float, float]]],
    prev: dict[str, Prev],
    before: dict[str, Prev],
) -> None:
    """For each node: set {field: (value, epoch observed)} unless a newer value is stored,
    and save the changed counter history. Two pipelined round trips for the whole batch."""
    store = get_store()
    nodes = sorted(latest)
    current = store.hgetall_many([_key("node", n) for n in nodes])
    writes: dict[str, dict[str, str]] = {}
    for node, stored in zip(nodes, current, strict=True):
        newer = {}
        for name, (value, ts) in latest[node].items():
            old = stored.get(name)
            if old is not None and float(old.partition("|")[2]) > ts:
                continue
            newer[name] = f"{value!r}|{ts!r}"
        writes[_key("node", node)] = newer
        old_prev = before.get(node, {})
        writes[_key("prev", node)] = {
            k: f"{v[0]!r}|{v[1]!r}" for k, v in prev.get(node, {}).items() if old_prev.get(k) != v
        }
    store.hset_many(writes)
    store.sadd(_key("nodes"), nodes)


def load_prev(nodes: list[str]) -> dict[str, Prev]:
    raws = get_store().hgetall_many([_key("prev", n) for n in nodes])
    out: dict[str, Prev] = {}
    for node, raw in zip(nodes, raws, strict=True):
        prev: Prev = {}
        for k, text in raw.items():
            value, _, stamp = text.partition("|")
            prev[k] = (float(value), float(stamp))
        out[node] = prev
    return out


def freshness_flags() -> dict[str, bool]:
    raw = get_store().hgetall_many([_key("fresh")])[0]
    return {node: flag == "1" for node, flag in raw.items()}


def set_freshness(node: str, fresh: bool) -> None:
    get_store().hset(_key("fresh"), {node: "1" if fresh else "0"})
