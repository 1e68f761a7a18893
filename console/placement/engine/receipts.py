"""A decision's receipt: the compact "why" every decision record keeps (docs/dashboard.md).

Built from what the engine's `Decision` already holds (its top candidates in the receipt's
compact form, `optimizer.decide.explain.receipt_candidates`, and the rejected nodes with
their reasons); the recorder thread serialises it with the record.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from console.placement.engine.core import RECEIPT_CANDIDATES, Decision

# 2 added each candidate's `prefill_ms` (cost attribution, console/policies/attribution.py);
# 3 added `learned`, why a trained scorer preferred the pick, on sampled decisions, and
# `split` on split decisions (issue #30); 4 added `probe`, on an exploration probe's answers
# (issue #26).
RECEIPT_VERSION = 4


def receipt_of(decision: Decision) -> dict[str, Any]:
    """`{"v", "candidates": [{node, site, score, ttft_ms, e2e_ms, prefill_ms, cost_usd,
    kv_used, queue}],
    "rejected": {reason: count}, "guard"?, "learned"?, "split"?}`: the best
    RECEIPT_CANDIDATES candidates in rank order, the rejected nodes counted by reason (not
    named: a receipt stays small on any fleet), the trust region's note when a learned
    scorer's trust region judged the decision, `learned` when the engine attributed a trained
    scorer's pick (`learned_why.py`). A split decision adds `split` (`Decision.split`): its
    prefill node, the KV transfer's bytes and time, and the estimates it was chosen over
    (docs/decisions.md, "Split decisions"). An exploration probe's answer adds `probe`
    (`Decision.probe`: the probe, its node, the policy's own pick; docs/twin.md); its
    candidates then start with the probe node."""
    receipt: dict[str, Any] = {
        "v": RECEIPT_VERSION,
        "candidates": decision.top[:RECEIPT_CANDIDATES],
        "rejected": dict(Counter(decision.rejected.values())),
    }
    if decision.guard is not None:
        receipt["guard"] = decision.guard
    if decision.learned is not None:
        receipt["learned"] = decision.learned
    if decision.prefill_node is not None and decision.split is not None:
        receipt["split"] = decision.split
    if decision.probe is not None:
        receipt["probe"] = decision.probe
    return receipt
