"""What `"explain": true` adds to a decision: every candidate with its score, rank, estimates
and the state it was judged on (docs/contracts.md §4), best first."""

from __future__ import annotations

from typing import Any

import numpy as np

from console.placement.engine.snapshot import Snapshot
from optimizer.kernel.candidates import Candidates, top_k
from optimizer.kernel.fleet import D_KV_USED, D_QUEUE, D_RUNNING, S_KV_CAPACITY
from optimizer.kernel.live import LiveState


def explain(
    candidates: Candidates,
    scores: np.ndarray,
    snap: Snapshot,
    live: LiveState | None,
    now: float,
    top: int | None = None,
) -> list[dict[str, Any]]:
    """Every candidate best first, or the best `top` only when given."""
    order = top_k(scores, len(scores) if top is None else min(top, len(scores)))
    est = candidates.est
    topology = snap.topology
    d, capacity = candidates.dynamic, candidates.static[:, S_KV_CAPACITY]
    blocks = candidates.prefix_blocks
    ages = live.age_s(candidates.index, now) if live is not None else None
    rows: list[dict[str, Any]] = []
    for rank, i in enumerate(order, start=1):
        name = candidates.names[i]
        node = topology.node_by_name[name]
        age = None if ages is None or np.isnan(ages[i]) else round(float(ages[i]), 3)
        rows.append(
            {
                "node": name,
                "site": node.site,
                "tier": topology.site_by_name[node.site].tier,
                "score": float(scores[i]),
                "rank": rank,
                "estimated_ttft_ms": round(float(est.ttft_s[i]) * 1000, 3),
                "estimated_e2e_ms": round(float(est.e2e_s[i]) * 1000, 3),
                "estimated_cost_usd": float(est.cost_usd[i]),
                "queue_depth": int(d[i, D_QUEUE]),
                "running": int(d[i, D_RUNNING]),
                "kv_used_fraction": float(d[i, D_KV_USED] / capacity[i]) if capacity[i] else 0.0,
                "prefix_blocks": int(blocks[i]),
                "telemetry_age_s": age,
            }
        )
    return rows
