"""Reads of the inventory."""

from __future__ import annotations

from typing import Any

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


def inventory_topology() -> Topology:
    """The whole inventory as a validated Topology (the file format of CONTRACTS §1).

    This is what `dump_topology` writes and what evaluations hand to the simulator, so the
    console and the optimizer always see the same fleet.
    """
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
    return Topology.model_validate(data)


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
