"""What the router records of each call it forwarded, with no client help, as the ext_proc
picker's response path does (`doors/extproc/picker.py`): `ok` from the node's status and a
complete answer, TTFT at the first token (the first body byte of an answer not streamed),
end-to-end at its end, and the node that served.

It goes through `runtime().record_outcome`, into the same breakers, decision records and SLO
windows as `POST /api/v1/placements/{id}/outcome`. Nodes skipped on the way (unreachable, or
5xx before the first byte) count as failures on their own breakers. The token counts of the
answer's `usage` go to `locus_router_tokens_total` (the decision record keeps the prompt size
the decision was made on; the runtime's outcome API takes no token counts).

A call whose client went away is not recorded: the node did nothing wrong, and a partial
answer has no end-to-end time to judge.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from console.placement.doors.router.forwarding import Attempt
from console.placement.doors.router.metrics import ROUTER_RETRIES, ROUTER_TOKENS
from console.placement.engine.runtime import runtime

logger = logging.getLogger(__name__)


@dataclass
class CallTimes:
    """One call's clock (`time.monotonic` seconds) and result, filled in as it goes."""

    received: float
    decision_id: str
    caller: str
    attempts: list[Attempt] = field(default_factory=list)
    node: str | None = None
    status: int = 0
    complete: bool = False
    first_token: float | None = None
    ended: float | None = None
    usage: dict[str, Any] | None = None
    # A split decision's prefill phase, run by the router (phases.py): None when unsplit.
    prefill_ok: bool | None = None


def record(times: CallTimes) -> dict[str, Any] | None:
    """Record the call's outcome; the outcome's answer, or None when there was none."""
    rt = runtime()
    skipped = times.attempts
    if times.node is None:
        if not skipped:
            return None
        # No node answered: the outcome is the last one tried's (its breaker counts it there).
        *skipped, last = skipped
        served, ok = last.node, False
    else:
        served, ok = times.node, 200 <= times.status < 300 and times.complete
    for attempt in skipped:
        rt.breakers.record(attempt.node, False)
        ROUTER_RETRIES.labels(node=attempt.node).inc()
    if times.usage is not None:
        for kind in ("prompt", "completion"):
            count = times.usage.get(f"{kind}_tokens")
            if isinstance(count, int) and count >= 0:
                ROUTER_TOKENS.labels(node=served, kind=kind).inc(count)
    ttft_ms = e2e_ms = None
    if ok and times.ended is not None:
        e2e_ms = (times.ended - times.received) * 1000
        first = times.first_token if times.first_token is not None else times.ended
        ttft_ms = min((first - times.received) * 1000, e2e_ms)
    try:
        return rt.record_outcome(
            times.decision_id,
            ok=ok,
            ttft_ms=ttft_ms,
            e2e_ms=e2e_ms,
            caller=times.caller,
            served_node=served,
            prefill_ok=times.prefill_ok,
        )
    except Exception:
        logger.warning("outcome of %s not recorded", times.decision_id, exc_info=True)
        return None
