"""From one router run's raw record to its row of `var/bench/routers.json` (docs/contracts.md §6).

A raw record (`run` in `cli.py` writes one per fleet, load and router) holds the plan without
prompt text, what the load generator saw per request (`node`, `status`, `ttft_ms`, `e2e_ms`,
`tokens`), the added-latency probe pairs, the router's CPU seconds over the replay, whether the
router passed `x-locus-source` on, the fleet's default source, and each node's prompt and
prefix-cache-hit token counters. The row, per the contract:

- `slo_attainment`: the share of planned requests served in full within their SLO's TTFT and
  end-to-end targets (and its `max_usd_per_1k`, when set) on a node their residency allows; a
  failed, unfinished or misplaced request misses;
- `ttft_ms`, `e2e_ms`: p50/p95/p99 over requests served in full;
- `added_ms`: p50/p99 of (through the router - straight to the node it picked) over the probe
  pairs;
- `cpu_us_per_request`: the router's processes' CPU time over the replay per planned request;
- `cost_per_1k_requests`: as the optimizer defines it (contracts §1): each served request pays
  its node's price over its prefill and its share of the decode steps it took part in, plus its
  prompt's egress; total over served requests, x 1000 / served. Prefill is exact per node and
  model (uncached tokens from the node's counters over its prefill rate), shared among the
  node's requests by prompt size; a request's decode share is estimated from its own stream:
  mean round time r over its rounds, the batch B whose step time `decode_step_ms +
  decode_step_ms_per_seq * B` is r, and a share of r / B per round;
- `residency_violations`: requests answered by a node outside their SLO's jurisdiction.

A router that dropped `x-locus-source` had every request timed from the fleet's default
source; its TTFT and end-to-end are moved to the request's own source (the network part of
both is the route's RTT plus the prompt's transfer, as `optimizer.sim` charges it), and a
request whose own source has no route to the node that answered fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from optimizer.decide.state.estimates import PROMPT_BYTES_PER_TOKEN
from optimizer.decision import node_view
from optimizer.topology import Topology
from tools.results.routers import FLEETS, LOADS, router_table

ROW_KEYS = (
    "slo_attainment",
    "ttft_ms",
    "e2e_ms",
    "added_ms",
    "cpu_us_per_request",
    "cost_per_1k_requests",
    "residency_violations",
)


def _pcts(values: Sequence[float], qs: Sequence[int]) -> dict[str, float]:
    if not values:
        return {f"p{q}": 0.0 for q in qs}
    return {f"p{q}": round(float(v), 2) for q, v in zip(qs, np.percentile(values, qs), strict=True)}


def network_s(topology: Topology, site: str, node: str, prompt_tokens: int) -> float | None:
    """The network part of TTFT from `site` to `node` (None: no route)."""
    route = topology.routes.get((site, topology.node_by_name[node].site))
    if route is None:
        return None
    return route.rtt_s + PROMPT_BYTES_PER_TOKEN * prompt_tokens * route.s_per_byte


def _decode_share_s(topology: Topology, node: str, model: str, r: dict[str, Any]) -> float:
    rounds = int(r.get("tokens", 0)) - 1
    if rounds <= 0:
        return 0.0
    view = node_view(topology, node, model)
    step_s = max((r["e2e_ms"] - r["ttft_ms"]) / 1000 / rounds, 1e-6)
    a, b = view.decode_step_ms / 1000, view.decode_step_ms_per_seq / 1000
    batch = (step_s - a) / b if b > 0 else 1.0
    batch = min(max(batch, 1.0), float(max(view.max_batch, 1)))
    return rounds * step_s / batch


def router_row(topology: Topology, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The contract's row for one router run (see the module docstring)."""
    plan = {p["i"]: p for p in raw["plan"]}
    source_site = {s.name: s.site for s in topology.sources}
    default_site = source_site.get(raw.get("fleet_source") or "", topology.sites[0].name)
    hits = {(n, m): h / t if t else 0.0 for (n, m), (t, h) in _counters(raw).items()}
    ttfts, e2es, met, violations = [], [], 0, 0
    cost, served = 0.0, 0
    for r in raw["results"]:
        p = plan[r["i"]]
        node, slo = r.get("node"), topology.slo_by_name.get(p["slo"] or "")
        if node not in topology.node_by_name:
            continue
        site = source_site.get(p["source"], default_site)
        residency = slo.residency if slo else None
        wrong = residency is not None and (
            topology.site_by_name[topology.node_by_name[node].site].jurisdiction != residency
        )
        violations += wrong
        if not r.get("ok"):
            continue
        ttft, e2e = r["ttft_ms"], r["e2e_ms"]
        if not raw["forwards_source"]:
            own = network_s(topology, site, node, p["prompt_tokens"])
            seen = network_s(topology, default_site, node, p["prompt_tokens"])
            if own is None or seen is None:
                continue
            ttft, e2e = ttft + (own - seen) * 1000, e2e + (own - seen) * 1000
        view = node_view(topology, node, p["model"])
        prefill_s = p["prompt_tokens"] * (1 - hits.get((node, p["model"]), 0.0))
        prefill_s /= max(view.prefill_tokens_per_s, 1e-9)
        busy_s = prefill_s + _decode_share_s(topology, node, p["model"], r)
        route = topology.routes.get((site, view.site))
        egress = 0.0
        if route is not None and site != view.site:
            egress = PROMPT_BYTES_PER_TOKEN * p["prompt_tokens"] * route.egress_usd_per_byte
        usd = view.usd_per_hour * busy_s / 3600 + egress
        cost, served = cost + usd, served + 1
        ttfts.append(ttft)
        e2es.append(e2e)
        ok = slo is None or (ttft <= slo.ttft_p95_ms and e2e <= slo.e2e_p95_ms)
        if slo is not None and slo.max_usd_per_1k is not None:
            ok = ok and usd * 1000 <= slo.max_usd_per_1k
        met += ok and not wrong
    added = [pair["router"] - pair["direct"] for pair in raw["probes"]]
    requests = max(len(raw["plan"]), 1)
    return {
        "slo_attainment": round(met / requests, 4),
        "ttft_ms": _pcts(ttfts, (50, 95, 99)),
        "e2e_ms": _pcts(e2es, (50, 95, 99)),
        "added_ms": _pcts(added, (50, 99)),
        "cpu_us_per_request": round(raw["router_cpu_s"] / requests * 1e6, 1),
        "cost_per_1k_requests": round(cost / served * 1000, 4) if served else 0.0,
        "residency_violations": violations,
    }


def _counters(raw: Mapping[str, Any]) -> dict[tuple[str, str], tuple[float, float]]:
    return {(c["node"], c["model"]): (c["prompt"], c["hits"]) for c in raw["counters"]}


def extras(topology: Topology, raw: Mapping[str, Any]) -> dict[str, Any]:
    """Beside the contract's keys: what the reader needs to weigh a row. `unreachable_unseen`
    counts requests of a router that dropped `x-locus-source` refused by a node the fleet's
    default source has no route to although their own source has one (each counted a miss;
    their true outcome is unknown)."""
    results = raw["results"]
    plan = {p["i"]: p for p in raw["plan"]}
    sites = {s.name: s.site for s in topology.sources}
    default_site = sites.get(raw.get("fleet_source") or "", topology.sites[0].name)
    unseen = 0
    for r in results:
        node = r.get("node")
        if raw["forwards_source"] or r.get("status") != 400 or node not in topology.node_by_name:
            continue
        size = plan[r["i"]]["prompt_tokens"]
        own = network_s(topology, sites.get(plan[r["i"]]["source"], default_site), node, size)
        unseen += own is not None and network_s(topology, default_site, node, size) is None
    return {
        "requests": len(raw["plan"]),
        "served": sum(1 for r in results if r.get("ok")),
        "errors": sum(1 for r in results if "error" in r),
        "unfinished": sum(1 for r in results if "ok" not in r and "error" not in r),
        "source_header_forwarded": raw["forwards_source"],
        "client_lag_p99_ms": _pcts([r["lag_ms"] for r in results if "lag_ms" in r], (99,))["p99"],
        "unreachable_unseen": unseen,
    }


def check_shape(report: Mapping[str, Any]) -> list[str]:
    """Where `report` departs from the contract's shape (empty: it conforms)."""
    problems = []
    fleets = report.get("fleets")
    if not isinstance(fleets, dict) or not fleets:
        return ["no 'fleets' object"]
    for fleet, loads in fleets.items():
        if fleet not in FLEETS:
            problems.append(f"unknown fleet {fleet!r}")
        for load, rows in loads.items():
            if load not in LOADS:
                problems.append(f"{fleet}: unknown load {load!r}")
            for name, row in rows.items():
                missing = [k for k in ROW_KEYS if k not in row]
                if missing:
                    problems.append(f"{fleet}/{load}/{name}: missing {', '.join(missing)}")
                    continue
                for key, qs in (("ttft_ms", 3), ("e2e_ms", 3), ("added_ms", 2)):
                    want = ("p50", "p95", "p99") if qs == 3 else ("p50", "p99")
                    if sorted(row[key]) != sorted(want):
                        problems.append(f"{fleet}/{load}/{name}: {key} keys {sorted(row[key])}")
    return problems


def markdown_table(report: Mapping[str, Any]) -> str:
    """The results table: one line per fleet, load and router (tools/results/routers.py, which
    renders docs/results/ from the same report)."""
    return router_table(report)
