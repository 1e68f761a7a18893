"""The real ASGI application with a decision engine that costs (almost) nothing, for
`bench_decisions.py --floor`: what the batch endpoint reaches when only the HTTP work, the
body parsing, the answers, the metrics and the decision records remain.

The engine's first decision for each request shape is real; later ones copy it with a fresh
decision id (so every answer is still recorded as its own decision). Benchmarks only: never
serve this.
"""

from __future__ import annotations

import time

from console.asgi import application
from console.placement.engine import core
from console.placement.engine.ids import decision_ids

_decide = core.Engine.decide
_first: dict[tuple[str, str | None, str | None], core.Decision] = {}


def _free_decide(self: core.Engine, body: core.DecisionInput) -> core.Decision:
    start = time.perf_counter()
    key = (body.model, body.source, body.site)
    model = _first.get(key)
    if model is None:
        model = _first[key] = _decide(self, body)
    decision = core.Decision(
        decision_ids.next(),  # as the real engine draws them
        model.request,
        model.node,
        model.site,
        model.fallbacks,
        model.policy,
        model.arm,
        model.rejected,
        session_id=body.session_id,
    )
    decision.latency_us = (time.perf_counter() - start) * 1e6
    return decision


core.Engine.decide = _free_decide  # type: ignore[method-assign]

__all__ = ["application"]
