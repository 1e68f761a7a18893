"""One schema per live event type (docs/contracts.md §4: JSON messages with a `type` field).

Events are checked against these when sent, so a producer cannot drift from what the
dashboard expects; tests assert every producer's events validate.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow")


class DecisionEvent(_Event):
    decision_id: str
    node: str | None
    site: str | None
    model: str
    slo: str | None
    policy: str
    fallbacks: list[str]
    latency_us: float
    ts: str
    # Additions (optional, so a producer without them still validates): a split decision's
    # prefill node (`node` decodes; issue #30) and the exploration probe that answered it
    # (its id, as the record's `probe` column; issue #26). Null on an ordinary decision.
    prefill_node: str | None = None
    probe: int | None = None


class DecisionSummaryEvent(_Event):
    """Aggregated counts for a time slice, sent instead of every decision under load."""

    window_s: float
    total: int
    by_node: dict[str, int]
    by_policy: dict[str, int]
    sampled: int


class NodeStateEvent(_Event):
    node: str
    state: str
    previous: str | None = None
    reason: str = ""
    by: str = ""
    ts: str


class NodeFreshnessEvent(_Event):
    node: str
    fresh: bool
    age_s: float | None
    ts: str


class BreachEvent(_Event):
    """A breach opened or resolved (telemetry/breaches.py): `observed` is the long window's
    burn rate at opening, `threshold` the rule's factor, `nodes` the nodes burning the SLO's
    budget; `model` and `node` are empty (the breach is the SLO's)."""

    id: int
    status: Literal["open", "resolved"]
    slo: str
    model: str
    node: str
    metric: Literal["within_targets", "error_rate"]
    severity: Literal["page", "ticket"]
    objective: float
    observed: float
    threshold: float
    nodes: list[str]
    opened_at: str
    ts: str


class BreakerEventSchema(_Event):
    node: str
    from_state: str
    to_state: str
    reason: str
    ts: str


class TrainingProgressEvent(_Event):
    run_id: int
    status: str
    progress: float
    message: str = ""


class CalibrationProgressEvent(_Event):
    run_id: int
    status: str
    progress: float
    message: str = ""


class ProbeTransitionEvent(_Event):
    """A step of an exploration probe (console/twin/probe_services.py)."""

    probe_id: int
    action: str
    from_state: str
    to_state: str
    actor: str
    reason: str = ""


class PolicyTransitionEvent(_Event):
    version_id: int
    name: str
    version: str
    from_state: str
    to_state: str
    actor: str
    reason: str = ""
    ts: str


EVENT_SCHEMAS: dict[str, type[_Event]] = {
    "decision": DecisionEvent,
    "decision.summary": DecisionSummaryEvent,
    "node.state": NodeStateEvent,
    "node.freshness": NodeFreshnessEvent,
    "breach": BreachEvent,
    "breaker": BreakerEventSchema,
    "training.progress": TrainingProgressEvent,
    "calibration.progress": CalibrationProgressEvent,
    "policy.transition": PolicyTransitionEvent,
    "probe.transition": ProbeTransitionEvent,
}


def validate_event(event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    """The event as sent on the wire: `{"type": ..., **data}`; raises on a schema mismatch."""
    schema = EVENT_SCHEMAS[event_type]
    return {"type": event_type, **schema.model_validate(data).model_dump(mode="json")}
