"""A served request's cost, attributed after the fact from what was measured.

The engine's decision-time estimate (`optimizer.decide.state.estimates`, the receipt's `cost_usd`)
prices the decode at the batch the node had when the request was placed (its running
sequences plus this one). A policy that consolidates a model on fewer nodes fills their
batches *after* its decisions, so each request's decode share is cheaper than any estimate
made at placement time could see: replaying the demo canary (tools/cost_attribution.py),
the generalist's arm costs 0.954x weighted-score's in the simulator's own accounting while
the estimates say 1.012x (8 seeds).

Attribution replaces the decode estimate by measurements once the outcome is known:

    cost = USD per second x (prefill seconds + decode seconds / batch)

- prefill seconds: the decision's estimate for the picked node (receipt `prefill_ms`); the
  prefill runs alone on the node, so it is charged in full, as the simulator charges it;
- decode seconds: end-to-end latency minus TTFT, as the caller reported them;
- batch: the node's running sequences as its telemetry reported them while the request
  decoded (`batch_during`), the share of the node each decoding sequence holds.

Egress is left out: at a few bytes per prompt token it is below a thousandth of the compute on
the fleets shipped here. The same two functions price the simulator's replays in the bench and
the live arms in the console (`console.policies.attribution`), so the two are comparable.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence


def batch_during(
    times: Sequence[float],
    running: Sequence[float],
    start: float,
    end: float,
    max_age_s: float = math.inf,
) -> float:
    """The node's batch while a request decoded from `start` to `end` (seconds, any epoch).

    `times` ascending, `running[i]` the node's running sequences sampled at `times[i]`. The
    mean of the samples inside [start, end]; without one (a decode shorter than the scrape
    interval), the latest sample before `end`, plus one if it was taken before `start`, when
    the request was not running yet. At least 1: the request ran. NaN (unknown) without any
    sample before `end`, or when that sample is more than `max_age_s` older than `start` (a
    node that stopped reporting says nothing about its batch)."""
    lo = bisect.bisect_left(times, start)
    hi = bisect.bisect_right(times, end)
    if hi > lo:
        return max(1.0, sum(running[lo:hi]) / (hi - lo))
    if hi == 0 or times[hi - 1] < start - max_age_s:
        return float("nan")
    before = running[hi - 1] + (1.0 if times[hi - 1] < start else 0.0)
    return max(1.0, before)


def attributed_cost_usd(
    usd_per_hour: float, prefill_s: float, decode_s: float, batch: float
) -> float:
    """Compute cost of one request: its prefill in full, its decode shared by the batch."""
    return usd_per_hour / 3600.0 * (max(prefill_s, 0.0) + max(decode_s, 0.0) / max(batch, 1.0))
