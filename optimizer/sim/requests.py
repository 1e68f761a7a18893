"""Per-request columns of a simulation run: inputs, progress and outcome.

Columns of plain lists rather than one object per request, because the event loop touches them
millions of times and list indexing is the cheapest access Python has.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from optimizer.decide.request import PlacementRequest

PENDING, SERVED, REJECTED, FAILED = 0, 1, 2, 3
STATUS_NAMES = ("pending", "served", "rejected", "failed")


class RequestTable:
    """Columns indexed by request id (the arrival order)."""

    def __init__(
        self,
        requests: Sequence[PlacementRequest],
        arrival_s: Sequence[float],
        model_index: dict[str, int],
        kv_bytes_per_token: dict[str, int],
    ) -> None:
        n = len(requests)
        self.requests = requests
        self.arrival = list(arrival_s)
        self.model = [model_index[r.model] for r in requests]
        self.prompt = [r.prompt_tokens for r in requests]
        self.output = [r.max_output_tokens for r in requests]
        self.hashes = [r.prefix_hashes for r in requests]
        # A sequence reserves KV for its whole final length at admission (see optimizer.sim).
        self.kv_need = [
            (r.prompt_tokens + r.max_output_tokens) * kv_bytes_per_token[r.model] for r in requests
        ]
        # The prompt's KV alone, which a split request's prefill node holds until it is sent.
        self.kv_prompt = [r.prompt_tokens * kv_bytes_per_token[r.model] for r in requests]
        self.node = [-1] * n  # the answering node (a split request's decode node)
        # A split request's prefill node (-1: not split), and whether its KV has reached the
        # decode node (which then admits it without prefilling: `optimizer.sim.occupancy`).
        self.prefill_node = [-1] * n
        self.prefilled = [False] * n
        # When a split request's prefill ended and its KV left (the twin's replay reads it to
        # place the prefill on its node's timeline: optimizer/calibration/design.py).
        self.handed_off = [0.0] * n
        self.half_rtt = [0.0] * n  # the return half of the RTT, added to TTFT and E2E
        self.cached = [0] * n
        self.cost = [0.0] * n
        self.share_start = [0.0] * n
        self.ttft = [0.0] * n
        self.e2e = [0.0] * n
        self.status = [PENDING] * n
        self.reject_reason: dict[int, str] = {}
        # Ids of requests whose outcome became known (first token, finish, failure, rejection)
        # in order; the RL environment drains it to score outcomes as they happen.
        self.resolved: list[int] = []
        # Called with (rid, ok) when a request is served or lost on its node: the
        # simulator's breakers (None: nobody listens).
        self.on_outcome: Callable[[int, bool], None] | None = None

    def first_token(self, rid: int, now: float) -> None:
        self.ttft[rid] = now + self.half_rtt[rid] - self.arrival[rid]
        self.resolved.append(rid)

    def finish(self, rid: int, now: float) -> None:
        self.e2e[rid] = now + self.half_rtt[rid] - self.arrival[rid]
        self.status[rid] = SERVED
        self.resolved.append(rid)
        if self.on_outcome is not None:
            self.on_outcome(rid, True)

    def fail(self, rid: int) -> None:
        self.status[rid] = FAILED
        self.resolved.append(rid)
        if self.on_outcome is not None:
            self.on_outcome(rid, False)
