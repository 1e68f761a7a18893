"""Reads of the inventory."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from pydantic import ValidationError

from console.inventory.models import (
    Accelerator,
    FleetSettings,
    Link,
    Node,
    NodeStateChange,
    Profile,
    ServedModel,
    Site,
    Slo,
    Source,
    WorkloadShare,
)
from optimizer.errors import InputFileError
from optimizer.topology import Topology
from optimizer.topology_files import _describe


class InvalidInventory(InputFileError):
    """The inventory is not a valid topology; `problems` says why, one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("inventory", problems)


def inventory_topology() -> Topology:
    """The whole inventory as a validated Topology (the file format of docs/contracts.md §1).

    This is what `dump_topology` writes and what evaluations hand to the simulator, so the
    console and the optimizer always see the same fleet. Raises InvalidInventory, listing
    every problem, if the inventory is not a valid topology.
    """
    data = _inventory_data()
    try:
        return Topology.model_validate(data)
    except ValidationError as exc:
        raise InvalidInventory(_problems(exc, data)) from exc


def node_prices() -> dict[str, float]:
    """Each node's price in US dollars per hour, by name."""
    return dict(Node.objects.values_list("name", "usd_per_hour"))


def node_names() -> list[str]:
    """Every node's name."""
    return list(Node.objects.values_list("name", flat=True))


def node_by_name(name: str) -> Node | None:
    return Node.objects.select_related("site").filter(name=name).first()


def node_state_changes(name: str, *, limit: int = 10) -> list[NodeStateChange]:
    """The node's latest state changes (drains, cordons, …), newest first."""
    return list(NodeStateChange.objects.filter(node__name=name)[:limit])


def state_changes_between(
    *, start: datetime, end: datetime, limit: int = 200
) -> list[NodeStateChange]:
    """Every node's state changes in [start, end), oldest first (the series' annotations)."""
    changes = NodeStateChange.objects.filter(at__gte=start, at__lt=end).select_related("node")
    return list(changes.order_by("at", "id")[:limit])


def inventory_has_nodes() -> bool:
    return Node.objects.exists()


def node_exists(name: str) -> bool:
    return Node.objects.filter(name=name).exists()


def source_exists(name: str) -> bool:
    return Source.objects.filter(name=name).exists()


def node_exporter_urls() -> list[tuple[str, str]]:
    """(node, url) for every exporter URL of every node that is not down."""
    rows = Node.objects.exclude(state="down").values_list("name", "exporter_urls")
    return [(name, url) for name, urls in rows for url in (urls or []) if isinstance(url, str)]


def node_sites(names: set[str]) -> dict[str, str]:
    """The site of each named node the inventory has."""
    return dict(Node.objects.filter(name__in=names).values_list("name", "site__name"))


def slo_list() -> QuerySet[Slo]:
    """Every SLO, with its targets."""
    return Slo.objects.all()


def inventory_problems() -> list[str]:
    """Why the inventory is not a valid topology: one line per problem, none if it is."""
    try:
        inventory_topology()
    except InvalidInventory as exc:
        return exc.problems
    return []


_INDEX = re.compile(r"\[\d+\]")


def _problems(exc: ValidationError, data: dict[str, Any]) -> list[str]:
    """The topology file's problem lines, without list positions: an entry's position in a
    dump of the inventory means nothing to its reader (and shifts with every write), its
    name does."""
    problems: list[str] = []
    for error in exc.errors():
        message, loc = _describe(dict(error), data)
        if not loc and error["type"] == "value_error":
            problems += message.removeprefix("Value error, ").splitlines()
        else:
            problems.append(message)
    return [_INDEX.sub("", p) for p in problems]


def _inventory_data() -> dict[str, Any]:
    data: dict[str, Any] = {
        "version": 1,
        "sites": [
            {"name": s.name, "tier": s.tier, "region": s.region, "jurisdiction": s.jurisdiction}
            for s in Site.objects.all()
        ],
        "links": [
            {
                "a": lk.site_a.name,
                "b": lk.site_b.name,
                "rtt_ms": lk.rtt_ms,
                "bandwidth_gbps": lk.bandwidth_gbps,
                "egress_usd_per_gb": lk.egress_usd_per_gb,
            }
            for lk in Link.objects.select_related("site_a", "site_b")
        ],
        "intra_site_rtt_ms": FleetSettings.load().intra_site_rtt_ms,
        "accelerators": [
            {"name": a.name, "memory_gib": a.memory_gib} for a in Accelerator.objects.all()
        ],
        "models": [
            {"name": m.name, "memory_gib": m.memory_gib, "kv_bytes_per_token": m.kv_bytes_per_token}
            for m in ServedModel.objects.all()
        ],
        "profiles": [
            {
                "model": p.model.name,
                "accelerator": p.accelerator.name,
                "prefill_tokens_per_s": p.prefill_tokens_per_s,
                "decode_step_ms": p.decode_step_ms,
                "decode_step_ms_per_seq": p.decode_step_ms_per_seq,
                "max_batch": p.max_batch,
            }
            for p in Profile.objects.select_related("model", "accelerator")
        ],
        "nodes": [
            _node_entry(n)
            for n in Node.objects.select_related("site", "accelerator").prefetch_related(
                "served_models"
            )
        ],
        "sources": [
            {"name": s.name, "site": s.site.name, "share": s.share, "slo": s.slo.name}
            for s in Source.objects.select_related("site", "slo")
        ],
        "slos": [_slo_entry(s) for s in Slo.objects.all()],
    }
    shares = list(WorkloadShare.objects.select_related("model"))
    if shares:
        data["workload"] = {"models": [{"name": w.model.name, "share": w.share} for w in shares]}
    return data


def _node_entry(node: Node) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": node.name,
        "site": node.site.name,
        "accelerator": node.accelerator.name,
        "gpus": node.gpus,
        "usd_per_hour": node.usd_per_hour,
        "models": sorted(m.name for m in node.served_models.all()),
        "role": node.role,
        "state": node.state,
    }
    if node.labels:
        entry["labels"] = node.labels
    if node.exporter_urls:
        entry["exporters"] = node.exporter_urls
    if node.address:
        entry["address"] = node.address
    return entry


def _slo_entry(slo: Slo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": slo.name,
        "ttft_p95_ms": slo.ttft_p95_ms,
        "e2e_p95_ms": slo.e2e_p95_ms,
    }
    if slo.residency:
        entry["residency"] = slo.residency
    for key in ("max_usd_per_1k", "max_error_rate"):
        if getattr(slo, key) is not None:
            entry[key] = getattr(slo, key)
    return entry
