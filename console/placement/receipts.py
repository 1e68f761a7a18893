"""A decision's receipt: the compact "why" every decision record keeps (docs/dashboard.md).

Built from what the engine's `Decision` already holds (its top candidates, scored and
estimated, and the rejected nodes with their reasons), so the hot path computes nothing new;
the recorder thread serialises it with the record.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from console.placement.engine.core import RECEIPT_CANDIDATES, Decision

RECEIPT_VERSION = 1


def receipt_of(decision: Decision) -> dict[str, Any]:
    """`{"v", "candidates": [{node, site, score, ttft_ms, e2e_ms, cost_usd, kv, queue}],
    "rejected": {reason: count}}`: the best RECEIPT_CANDIDATES candidates in rank order and
    the rejected nodes counted by reason (not named: a receipt stays small on any fleet)."""
    return {
        "v": RECEIPT_VERSION,
        "candidates": [
            {
                "node": c["node"],
                "site": c["site"],
                "score": c["score"],
                "ttft_ms": c["estimated_ttft_ms"],
                "e2e_ms": c["estimated_e2e_ms"],
                "cost_usd": c["estimated_cost_usd"],
                "kv_used": round(c["kv_used_fraction"], 4),
                "queue": c["queue_depth"],
            }
            for c in decision.candidates[:RECEIPT_CANDIDATES]
        ],
        "rejected": dict(Counter(decision.rejected.values())),
    }
