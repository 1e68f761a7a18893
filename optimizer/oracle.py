"""The limit: what placement with no queueing and a perfect prefix cache would reach.

For each arrival, every node that passes the hard constraints is idle and has every block
any earlier request of the same model prefilled (a fleet-wide, unbounded cache). The oracle
then picks, per request, a node meeting its SLO when one exists; its TTFT is the best one.
Latency is counted at batch 1 and cost at a full batch's 1/batch share, the optimistic
extreme of each, so no policy can beat these figures on the same arrivals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from optimizer.constraints import filter_candidates
from optimizer.decide.request import BLOCK_TOKENS, PlacementRequest
from optimizer.decide.state.estimates import PROMPT_BYTES_PER_TOKEN
from optimizer.decision import NodeView, node_view
from optimizer.estimates import decode_step_s, estimate
from optimizer.topology import Topology


def _views(topology: Topology) -> dict[str, list[NodeView]]:
    return {
        m.name: [node_view(topology, n.name, m.name) for n in topology.nodes]
        for m in topology.models
    }


def _optimistic_cost(
    request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
) -> np.ndarray:
    decode_tokens = max(request.max_output_tokens - 1, 0)
    prompt_bytes = PROMPT_BYTES_PER_TOKEN * request.prompt_tokens
    costs = []
    for c in candidates:
        route = topology.routes[(request.source_site, c.site)]
        per_token = decode_step_s(c, c.max_batch) / c.max_batch
        cached = min(c.prefix_blocks * BLOCK_TOKENS, request.prompt_tokens)
        prefill = (request.prompt_tokens - cached) / c.prefill_tokens_per_s
        costs.append(
            c.usd_per_hour / 3600.0 * (prefill + decode_tokens * per_token)
            + prompt_bytes * route.egress_usd_per_byte
        )
    return np.array(costs, dtype=np.float64)


def oracle_report(topology: Topology, requests: Sequence[PlacementRequest]) -> dict[str, Any]:
    """`{"slo_attainment": .., "ttft_ms": {"mean": ..}}` for `requests` in arrival order."""
    views = _views(topology)
    seen: dict[str, set[int]] = {m.name: set() for m in topology.models}
    met = 0
    ttfts: list[float] = []
    for request in requests:
        candidates, _ = filter_candidates(request, views[request.model], topology)
        known = seen[request.model]
        matched = 0
        for h in request.prefix_hashes:
            if h not in known:
                break
            matched += 1
        known.update(request.prefix_hashes)
        if not candidates:
            continue
        for view in candidates:
            view.prefix_blocks = matched
        est = estimate(request, candidates, topology)
        ttfts.append(float(est.ttft_s.min()))
        ok = np.ones(len(candidates), dtype=bool)
        slo = topology.slo_by_name.get(request.slo) if request.slo is not None else None
        if slo is not None:
            ok &= est.ttft_s * 1000.0 <= slo.ttft_p95_ms
            ok &= est.e2e_s * 1000.0 <= slo.e2e_p95_ms
            if slo.max_usd_per_1k is not None:
                ok &= _optimistic_cost(request, candidates, topology) * 1000.0 <= (
                    slo.max_usd_per_1k
                )
        met += bool(ok.any())
    return {
        "slo_attainment": met / len(requests) if requests else 0.0,
        "ttft_ms": {"mean": float(np.mean(ttfts)) * 1000.0 if ttfts else 0.0},
        "servable": len(ttfts),
    }
