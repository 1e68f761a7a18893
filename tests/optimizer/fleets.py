"""Small hand-built fleets for optimizer tests (no Django needed)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from optimizer.decide.registry import get_policy
from optimizer.decide.request import PlacementRequest, placement_request
from optimizer.sim import SimResult, simulate
from optimizer.topology import Topology
from optimizer.topology_files import parse_topology

REPO = Path(__file__).resolve().parents[2]
TRACES_DIR = REPO / "optimizer" / "data" / "traces"
MOONCAKE = TRACES_DIR / "mooncake_synthetic.jsonl"
AZURE = TRACES_DIR / "azure_llm_2023_conv.csv"
FLEET_DEMO = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"

# Four sites on three tiers and two jurisdictions; numbers chosen to make hand computation
# easy: 1 kB of KV per token, a big GPU at 10k prefill tokens/s and 10 ms + 1 ms/seq steps.
TINY: dict[str, Any] = {
    "version": 1,
    "sites": [
        {"name": "a-edge", "tier": "edge", "region": "r1", "jurisdiction": "EU"},
        {"name": "b-core", "tier": "regional", "region": "r1", "jurisdiction": "EU"},
        {"name": "c-cloud", "tier": "cloud", "region": "r2", "jurisdiction": "US"},
        {"name": "d-device", "tier": "device", "region": "r1", "jurisdiction": "EU"},
    ],
    "links": [
        {
            "a": "a-edge",
            "b": "b-core",
            "rtt_ms": 10,
            "bandwidth_gbps": 1,
            "egress_usd_per_gb": 0.01,
        },
        {
            "a": "a-edge",
            "b": "c-cloud",
            "rtt_ms": 100,
            "bandwidth_gbps": 1,
            "egress_usd_per_gb": 0.05,
        },
        {
            "a": "b-core",
            "b": "c-cloud",
            "rtt_ms": 80,
            "bandwidth_gbps": 10,
            "egress_usd_per_gb": 0.05,
        },
        {"a": "a-edge", "b": "d-device", "rtt_ms": 4, "bandwidth_gbps": 1},
    ],
    "accelerators": [{"name": "small", "memory_gib": 24}, {"name": "big", "memory_gib": 80}],
    "models": [{"name": "m1", "memory_gib": 16, "kv_bytes_per_token": 1000}],
    "profiles": [
        {
            "model": "m1",
            "accelerator": "big",
            "prefill_tokens_per_s": 10000,
            "decode_step_ms": 10,
            "decode_step_ms_per_seq": 1,
            "max_batch": 4,
        },
        {
            "model": "m1",
            "accelerator": "small",
            "prefill_tokens_per_s": 2000,
            "decode_step_ms": 20,
            "decode_step_ms_per_seq": 2,
            "max_batch": 2,
        },
    ],
    "nodes": [
        {
            "name": "edge-s",
            "site": "a-edge",
            "accelerator": "small",
            "usd_per_hour": 1.0,
            "models": ["m1"],
        },
        {
            "name": "core-l",
            "site": "b-core",
            "accelerator": "big",
            "usd_per_hour": 4.0,
            "models": ["m1"],
        },
        {
            "name": "cloud-l",
            "site": "c-cloud",
            "accelerator": "big",
            "usd_per_hour": 3.0,
            "models": ["m1"],
        },
        {
            "name": "dev-s",
            "site": "d-device",
            "accelerator": "small",
            "usd_per_hour": 0.1,
            "models": ["m1"],
        },
    ],
    "sources": [{"name": "app", "site": "a-edge", "share": 1.0, "slo": "std"}],
    "slos": [
        {"name": "std", "ttft_p95_ms": 2000, "e2e_p95_ms": 20000},
        {"name": "eu-only", "ttft_p95_ms": 2000, "e2e_p95_ms": 20000, "residency": "EU"},
    ],
    "workload": {"models": [{"name": "m1", "share": 1.0}]},
}


def tiny_topology(keep_nodes: tuple[str, ...] | None = None, **changes: Any) -> Topology:
    """TINY, optionally restricted to some nodes and with top-level sections replaced."""
    data = copy.deepcopy(TINY)
    if keep_nodes is not None:
        data["nodes"] = [n for n in data["nodes"] if n["name"] in keep_nodes]
    data.update(changes)
    return parse_topology(yaml.safe_dump(data), "tiny.yaml")


def request(
    topology: Topology,
    prompt: int = 1000,
    output: int = 11,
    hashes: tuple[int, ...] = (),
    slo: str | None = "std",
    site: str = "a-edge",
) -> PlacementRequest:
    return placement_request(
        topology,
        model="m1",
        source_site=site,
        slo=slo,
        prompt_tokens=prompt,
        max_output_tokens=output,
        prefix_hashes=hashes,
    )


def _node(name: str, site: str, accelerator: str, role: str, usd: float = 1.0) -> dict[str, Any]:
    return {
        "name": name,
        "site": site,
        "accelerator": accelerator,
        "usd_per_hour": usd,
        "models": ["m1"],
        "role": role,
    }


# TINY's sites with prefill and decode pools (issue #30): a prefill and a decode node in the
# core, a decode and a mixed node at the edge, a prefill node in the (US) cloud.
PD_NODES: list[dict[str, Any]] = [
    _node("core-p", "b-core", "big", "prefill"),
    _node("core-d", "b-core", "big", "decode"),
    _node("edge-d", "a-edge", "small", "decode"),
    _node("edge-m", "a-edge", "small", "mixed"),
    _node("cloud-p", "c-cloud", "big", "prefill"),
]


def pd_topology(
    keep_nodes: tuple[str, ...] | None = None, kv_bytes_per_token: int = 1000
) -> Topology:
    """TINY with `PD_NODES` (optionally some of them) and the KV bytes per token given."""
    nodes = [n for n in PD_NODES if keep_nodes is None or n["name"] in keep_nodes]
    model = {"name": "m1", "memory_gib": 16, "kv_bytes_per_token": kv_bytes_per_token}
    return tiny_topology(nodes=nodes, models=[model])


# A node with room for exactly four 512-token blocks of KV (2 GiB at 1 MiB a token), 1000
# prefill tokens/s, decode 10 ms + 1 ms per sequence; the audit that found two deviations of
# the simulator (tests in tests/optimizer/test_sim_timing.py and sim/test_occupancy.py)
# computed these by hand.
FOUR_BLOCKS = """
version: 1
sites: [{name: s1, tier: edge, region: r, jurisdiction: EU}]
accelerators: [{name: acc, memory_gib: 4}]
models: [{name: m, memory_gib: 2, kv_bytes_per_token: 1048576}]
profiles: [{model: m, accelerator: acc, prefill_tokens_per_s: 1000, decode_step_ms: 10,
            decode_step_ms_per_seq: 1, max_batch: 2}]
nodes: [{name: n1, site: s1, accelerator: acc, gpus: 1, usd_per_hour: 3.6, models: [m]}]
"""


def four_block_run(specs: list[tuple[float, int, int, tuple[int, ...]]]) -> SimResult:
    """`simulate` least-loaded on `FOUR_BLOCKS`: one request per (arrival s, prompt tokens,
    output tokens, prefix hashes)."""
    topo = parse_topology(FOUR_BLOCKS)
    reqs = [
        placement_request(
            topo,
            model="m",
            source_site="s1",
            slo=None,
            prompt_tokens=prompt,
            max_output_tokens=output,
            prefix_hashes=hashes,
        )
        for _, prompt, output, hashes in specs
    ]
    return simulate(topo, get_policy("least-loaded", topo), reqs, [at for at, *_ in specs])
