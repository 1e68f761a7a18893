"""The rows of a topology import: every entry upserted by name, touching the database only
where something differs, and counted (`services.topology_import` wraps this in its
transaction, lock and whole-inventory check)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db import models as dj_models

from console.inventory.models import (
    Accelerator,
    FleetSettings,
    Link,
    Node,
    Profile,
    ServedModel,
    Site,
    Slo,
    Source,
    WorkloadShare,
)
from optimizer.topology import Topology


@dataclass
class ImportSummary:
    """What an import did, per kind of entry: created, updated, unchanged, deleted."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)

    def record(self, kind: str, outcome: str) -> None:
        self.counts.setdefault(kind, Counter())[outcome] += 1

    @property
    def changed(self) -> bool:
        return any(c["created"] or c["updated"] or c["deleted"] for c in self.counts.values())

    def __str__(self) -> str:
        parts = []
        for kind, c in self.counts.items():
            done = ", ".join(f"{n} {what}" for what, n in sorted(c.items()) if n)
            parts.append(f"{kind}: {done}")
        return "; ".join(parts)


def _upsert(
    model: type[dj_models.Model],
    summary: ImportSummary,
    kind: str,
    lookup: dict[str, Any],
    values: dict[str, Any],
    *,
    m2m: dict[str, set[int]] | None = None,
) -> Any:
    """Create or update one row (and its many-to-many sets), touching the database only where
    something differs, and record which of the two happened."""
    obj = model.objects.filter(**lookup).first()  # type: ignore[attr-defined]
    if obj is None:
        obj = model.objects.create(**lookup, **values)  # type: ignore[attr-defined]
        outcome = "created"
    else:
        changed = [name for name, value in values.items() if getattr(obj, name) != value]
        for name in changed:
            setattr(obj, name, values[name])
        if changed:
            obj.save(update_fields=changed)
        outcome = "updated" if changed else "unchanged"
    for name, wanted in (m2m or {}).items():
        related = getattr(obj, name)
        if set(related.values_list("pk", flat=True)) != wanted:
            related.set(wanted)
            outcome = "created" if outcome == "created" else "updated"
    summary.record(kind, outcome)
    return obj


def _prune(
    model: type[dj_models.Model], keep_ids: set[int], summary: ImportSummary, kind: str
) -> None:
    stale = model.objects.exclude(pk__in=keep_ids)  # type: ignore[attr-defined]
    for _ in range(stale.count()):
        summary.record(kind, "deleted")
    stale.delete()


def inventory_import(topology: Topology, prune: bool) -> ImportSummary:
    """Upsert every entry of `topology` by name (and, with `prune`, delete the rest); the
    caller holds the transaction and the inventory lock (`services.topology_import`)."""
    summary = ImportSummary()
    fleet = FleetSettings.load()
    if fleet.intra_site_rtt_ms != topology.intra_site_rtt_ms:
        fleet.intra_site_rtt_ms = topology.intra_site_rtt_ms
        fleet.save()
        summary.record("fleet", "updated")

    sites = {
        s.name: _upsert(
            Site,
            summary,
            "sites",
            {"name": s.name},
            {"tier": s.tier, "region": s.region, "jurisdiction": s.jurisdiction},
        )
        for s in topology.sites
    }
    accelerators = {
        a.name: _upsert(
            Accelerator, summary, "accelerators", {"name": a.name}, {"memory_gib": a.memory_gib}
        )
        for a in topology.accelerators
    }
    served = {
        m.name: _upsert(
            ServedModel,
            summary,
            "models",
            {"name": m.name},
            {"memory_gib": m.memory_gib, "kv_bytes_per_token": m.kv_bytes_per_token},
        )
        for m in topology.models
    }
    links = []
    for link in topology.links:
        a, b = sorted((sites[link.a], sites[link.b]), key=lambda s: s.pk)
        links.append(
            _upsert(
                Link,
                summary,
                "links",
                {"site_a": a, "site_b": b},
                {
                    "rtt_ms": link.rtt_ms,
                    "bandwidth_gbps": link.bandwidth_gbps,
                    "egress_usd_per_gb": link.egress_usd_per_gb,
                },
            )
        )
    profiles = [
        _upsert(
            Profile,
            summary,
            "profiles",
            {"model": served[p.model], "accelerator": accelerators[p.accelerator]},
            {
                "prefill_tokens_per_s": p.prefill_tokens_per_s,
                "decode_step_ms": p.decode_step_ms,
                "decode_step_ms_per_seq": p.decode_step_ms_per_seq,
                "max_batch": p.max_batch,
            },
        )
        for p in topology.profiles
    ]
    slos = {
        s.name: _upsert(
            Slo,
            summary,
            "slos",
            {"name": s.name},
            {
                "ttft_p95_ms": s.ttft_p95_ms,
                "e2e_p95_ms": s.e2e_p95_ms,
                "residency": s.residency or "",
                "max_usd_per_1k": s.max_usd_per_1k,
                "max_error_rate": s.max_error_rate,
            },
        )
        for s in topology.slos
    }
    nodes = []
    for n in topology.nodes:
        values: dict[str, Any] = {
            "site": sites[n.site],
            "accelerator": accelerators[n.accelerator],
            "gpus": n.gpus,
            "usd_per_hour": n.usd_per_hour,
            "role": n.role,
            "labels": dict(n.labels),
            "exporter_urls": list(n.exporters),
            "address": n.address or "",
        }
        if "state" in n.model_fields_set:
            values["state"] = n.state
        node = _upsert(
            Node,
            summary,
            "nodes",
            {"name": n.name},
            values,
            m2m={"served_models": {served[m].pk for m in n.models}},
        )
        nodes.append(node)
    sources = [
        _upsert(
            Source,
            summary,
            "sources",
            {"name": s.name},
            {"site": sites[s.site], "share": s.share, "slo": slos[s.slo]},
        )
        for s in topology.sources
    ]
    workload = [
        _upsert(WorkloadShare, summary, "workload", {"model": served[w.name]}, {"share": w.share})
        for w in (topology.workload.models if topology.workload else ())
    ]

    if prune:
        # Children first, so protected foreign keys never block the delete.
        _prune(WorkloadShare, {w.pk for w in workload}, summary, "workload")
        _prune(Source, {s.pk for s in sources}, summary, "sources")
        _prune(Node, {n.pk for n in nodes}, summary, "nodes")
        _prune(Profile, {p.pk for p in profiles}, summary, "profiles")
        _prune(Link, {lk.pk for lk in links}, summary, "links")
        _prune(Slo, {s.pk for s in slos.values()}, summary, "slos")
        _prune(ServedModel, {m.pk for m in served.values()}, summary, "models")
        _prune(Accelerator, {a.pk for a in accelerators.values()}, summary, "accelerators")
        _prune(Site, {s.pk for s in sites.values()}, summary, "sites")
    return summary
