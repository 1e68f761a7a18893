"""The decision endpoints' work, shared by the REST views and the ASGI fast path: parse the
body, ask the runtime, build the answer. Returns (HTTP status, JSON payload); invalid input
raises DRF's ValidationError, which both callers render in the API's one error shape. The
scheduler extender builds its input with `decision_input` too."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError

from console.placement.doors.bodies import PlacementBatchBody, PlacementRequestBody, parse
from console.placement.engine.inputs import DecisionInput, UnknownName
from console.placement.engine.runtime import Decision, runtime
from console.placement.metrics import NO_CANDIDATE

NO_NODE_MESSAGE = "No node may serve this request."


def decide_one(data: Any, caller: str = "") -> tuple[int, dict[str, Any]]:
    """`caller` is the asking identity's name, recorded so only it reports the outcome."""
    body = parse(PlacementRequestBody, data)
    decision = _decide(decision_input(body, caller))
    if decision.node is None:
        return 503, _unplaceable(decision)
    return 200, _answer(decision, body.explain)


def decide_batch(data: Any, caller: str = "") -> tuple[int, dict[str, Any]]:
    """Decide many requests in order. One malformed request rejects the whole batch, and it
    is found before any decision is made: a refused batch leaves no decision behind."""
    body = parse(PlacementBatchBody, data)
    inputs = [decision_input(item, caller) for item in body.requests]
    serving = runtime()
    serving.ensure_started()
    for index, item in enumerate(inputs):
        try:
            serving.engine.resolve(item)
        except UnknownName as exc:
            raise ValidationError({"requests": {str(index): {exc.field: [str(exc)]}}}) from exc
    answers = []
    for item in inputs:
        decision = _decide(item)
        answers.append(
            _answer(decision, item.explain)
            if decision.node is not None
            else {"error": _unplaceable(decision)}
        )
    return 200, {"decisions": answers}


def decision_input(body: PlacementRequestBody, caller: str = "") -> DecisionInput:
    """The engine's input for a validated placements body (the extender builds one too)."""
    return DecisionInput(
        model=body.model,
        prompt_tokens=body.prompt_tokens,
        max_output_tokens=body.max_output_tokens,
        source=body.source,
        site=body.site,
        slo=body.slo,
        prefix_hashes=tuple(body.prefix_hashes),
        session_id=body.session_id or None,
        explain=body.explain,
        caller=caller,
    )


def _decide(body: DecisionInput) -> Decision:
    try:
        return runtime().decide(body)
    except UnknownName as exc:
        raise ValidationError({exc.field: [str(exc)]}) from exc


def _answer(d: Decision, explain: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "decision_id": d.decision_id,
        "node": d.node,
        "site": d.site,
        "fallbacks": d.fallbacks,
        "policy": {"name": d.policy.name, "version": d.policy.version},
        "arm": d.arm,
    }
    if d.prefill_node is not None:
        # Split (issue #30): `node` decodes once `prefill_node` has prefilled. Absent when
        # `node` runs both phases, so unsplit answers stay as they were.
        body["prefill_node"] = d.prefill_node
        body["prefill_site"] = d.prefill_site
        body["prefill_address"] = d.prefill_address
    if any(p is not None for p in d.prefill_fallbacks):
        body["prefill_fallbacks"] = d.prefill_fallbacks
    if d.degraded:
        body["degraded"] = d.degraded
    if d.probe is not None:
        # An exploration probe sent it (docs/twin.md): absent on the policy's own answers.
        body["probe"] = d.probe
    if explain:
        body["candidates"] = d.candidates
        if d.guard is not None:
            body["guard"] = d.guard
        body["rejected"] = [{"node": n, "reason": r} for n, r in sorted(d.rejected.items())]
    return body


def _unplaceable(d: Decision) -> dict[str, Any]:
    NO_CANDIDATE.inc()
    return {"message": NO_NODE_MESSAGE, "reasons": dict(sorted(d.rejected.items()))}
