"""Attributed cost of served requests: the canary's cost from measurements, not estimates.

A rollout arm's `estimated_usd_per_1k` is the engine's decision-time estimate of the picked
node, which prices the decode at the batch the node had at placement; a policy that fills
batches by consolidating a model is cheaper than any such estimate can see (the demo canary's
replay: the generalist's arm at 0.954x weighted-score's in the simulator's accounting, 1.012x by
the estimates; tools/cost_attribution.py). `attributed_costs` prices each served request
by `optimizer.attribution` from the receipt's prefill estimate, the TTFT and end-to-end
latency its caller reported, and the node's `running` telemetry while it decoded
(docs/operations.md, "Watching a canary").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from console.inventory.selectors import node_prices
from optimizer.attribution import attributed_cost_usd, batch_during
from telemetry.selectors import running_history

# Callers report latencies unbounded above (docs/contracts.md); a request said to have taken
# longer than a day is not priced, and does not stretch the telemetry read.
MAX_E2E_MS = 86_400_000.0


@dataclass(frozen=True, slots=True)
class Served:
    """What attribution needs of one served request's decision record."""

    node: str
    created_at: datetime
    ttft_ms: float
    e2e_ms: float
    prefill_ms: float


def attributed_costs(served: Sequence[Served]) -> list[float | None]:
    """Each request's attributed cost in US dollars, or None when it cannot be attributed:
    its node is not in the inventory, its node's telemetry holds no `running` reading from
    the request's decode or the LOCUS_TELEMETRY_STALE_SECONDS before it (a node that stopped
    reporting says nothing about its batch), or its reported E2E exceeds `MAX_E2E_MS`."""
    plausible = [s for s in served if s.e2e_ms <= MAX_E2E_MS]
    if not plausible:
        return [None] * len(served)
    stale_s = float(settings.LOCUS_TELEMETRY_STALE_SECONDS)
    start = min(s.created_at for s in plausible) - timedelta(seconds=stale_s)
    end = max(s.created_at + timedelta(milliseconds=s.e2e_ms) for s in plausible)
    prices = node_prices()
    history = running_history(nodes={s.node for s in plausible}, start=start, end=end)
    costs: list[float | None] = []
    for s in served:
        price, samples = prices.get(s.node), history.get(s.node)
        if s.e2e_ms > MAX_E2E_MS:
            costs.append(None)
            continue
        t0 = s.created_at.timestamp()
        first_token, finish = t0 + s.ttft_ms / 1000.0, t0 + s.e2e_ms / 1000.0
        batch = (
            batch_during(samples[0], samples[1], first_token, finish, max_age_s=stale_s)
            if samples is not None
            else math.nan
        )
        if price is None or math.isnan(batch):
            costs.append(None)
            continue
        decode_s = (s.e2e_ms - s.ttft_ms) / 1000.0
        costs.append(attributed_cost_usd(price, s.prefill_ms / 1000.0, decode_s, batch))
    return costs
