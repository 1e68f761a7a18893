"""Reads for placement: decision records for dashboards, and what the decision engine's
snapshot is built from (inventory, telemetry, rollout, shared breakers), off the hot path."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from console.inventory.selectors import inventory_has_nodes, inventory_topology
from console.inventory.signals import inventory_revision
from console.placement.models import DecisionRecord
from console.placement.probes import running_probe
from console.placement.rollout import rollout_store
from optimizer.decide.state.live import NodeSample
from optimizer.decide.state.snapshot import PolicyRef, Rollout, Snapshot
from telemetry.selectors import latest_fleet_state
from telemetry.slo_status import slo_standing
from telemetry.state import NodeTelemetry

_NOT_JUDGED: dict[str, Any] = {
    "objective": None,
    "burn_rates": [],
    "open_breach": None,
    "open_breach_metric": None,
}


class EmptyInventory(Exception):
    """No node to place on yet: the engine has no snapshot until a fleet is loaded."""

    def __init__(self) -> None:
        super().__init__(
            "the inventory has no nodes yet (load a fleet: manage.py load_topology FILE, "
            "or add nodes in the console)"
        )


# Where server processes share the nodes whose breaker is open (node -> when it opened).
BREAKER_CACHE_KEY = "locus:breakers:open"


@dataclass(slots=True)
class RecentDecision:
    """What an outcome report needs of its decision."""

    node: str
    slo: str | None
    model: str
    # Who asked for it (an identity name); only it may report the outcome ("" for records
    # from before decisions named their caller: anyone's).
    decided_by: str = ""
    has_outcome: bool = False
    # The prefill node of a split decision (issue #30); None when `node` ran both phases.
    prefill_node: str | None = None


def node_sample(state: NodeTelemetry) -> NodeSample:
    """The telemetry pipeline's latest node state as placement reads it.

    Missing readings count as idle: a node whose exporter does not report queue depth is
    placed on the rest of its state rather than excluded."""
    return NodeSample(
        queue_depth=int(state.queue_depth or 0),
        running=int(state.running or 0),
        kv_usage=float(state.kv_usage or 0.0),
        measured_at=state.updated_at.timestamp(),
    )


def engine_snapshot(
    *, default_policy: PolicyRef, previous: Snapshot | None, breaker_open_s: float
) -> Snapshot:
    """Read everything a decision needs (database, telemetry cache, shared breakers).

    The topology (a dozen queries and a validation, ~25 ms of CPU for the demo fleet) is
    rebuilt only when the inventory's revision moved since `previous`; rollout, telemetry and
    breakers are read every time. A breaker shared as open longer ago than `breaker_open_s`
    has gone half-open in the process that tripped it (or that process died): it must not
    re-open breakers here."""
    revision = inventory_revision()
    if previous is not None and previous.inventory_revision == revision:
        topology = previous.topology
    elif not inventory_has_nodes():
        # Said plainly: validating the empty inventory would report each of its five
        # empty sections as a schema error.
        raise EmptyInventory
    else:
        topology = inventory_topology()
    loads = {name: node_sample(state) for name, state in latest_fleet_state().items()}
    rollout: Rollout = rollout_store().state(default=default_policy)
    probe = running_probe()
    try:
        opened: dict[str, float] = cache.get(BREAKER_CACHE_KEY) or {}
    except Exception:  # Redis down: breakers stay per process until it is back
        opened = {}
    horizon = time.time() - breaker_open_s
    shared_open = frozenset(node for node, at in opened.items() if at > horizon)
    return Snapshot(
        topology=topology,
        loads=loads,
        rollout=rollout,
        shared_open_breakers=shared_open,
        inventory_revision=revision,
        probe=probe,
    )


@dataclass(frozen=True, slots=True)
class DecisionQuery:
    """What a search over the decision records asks for; None is "any"."""

    decision_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    node: str | None = None
    model: str | None = None
    slo: str | None = None
    source: str | None = None
    policy_name: str | None = None
    policy_version: str | None = None
    arm: str | None = None
    ok: bool | None = None
    slo_met: bool | None = None
    newest_first: bool = True


def decision_search(query: DecisionQuery) -> QuerySet[DecisionRecord]:
    """Every stored decision record matching `query` (all its fields at once), newest first
    unless asked otherwise. `since` is inclusive, `until` exclusive, so consecutive ranges
    never count a decision twice. Each filter is an equality on an indexed column or on the
    time index, so the search stays a range scan on any number of records (migration 0005)."""
    exact = {
        "pk": query.decision_id,
        "node": query.node,
        "model": query.model,
        "slo": query.slo,
        "source": query.source,
        "policy_name": query.policy_name,
        "policy_version": query.policy_version,
        "arm": query.arm,
        "ok": query.ok,
        "slo_met": query.slo_met,
    }
    records = DecisionRecord.objects.filter(**{k: v for k, v in exact.items() if v is not None})
    if query.since is not None:
        records = records.filter(created_at__gte=query.since)
    if query.until is not None:
        records = records.filter(created_at__lt=query.until)
    order = "-created_at" if query.newest_first else "created_at"
    # The id breaks ties between decisions recorded in the same microsecond: pages never
    # repeat or skip a record.
    return records.order_by(order, order.replace("created_at", "id"))


def recent_decision(*, decision_id: str) -> RecentDecision | None:
    """A recorded decision's node, SLO, model and whether it has its outcome; None if there
    is no such decision."""
    row = (
        DecisionRecord.objects.filter(pk=decision_id)
        .values_list("node", "slo", "model", "outcome_at", "decided_by", "prefill_node")
        .first()
    )
    if row is None:
        return None
    return RecentDecision(
        node=row[0],
        slo=row[1] or None,
        model=row[2],
        decided_by=row[4],
        has_outcome=row[3] is not None,
        prefill_node=row[5] or None,
    )


def decision_overview(*, window_s: float = 900.0, rate_window_s: float = 60.0) -> dict[str, Any]:
    """Decisions per second (last `rate_window_s`) and, per SLO, the attainment of the
    outcomes reported within `window_s` (served and met every target / outcomes), judged as
    breaches are: the SLO's objective, its burn rates under each rule now and its worst open
    breach (telemetry.slo_status.slo_standing)."""
    now = timezone.now()
    recent = DecisionRecord.objects.filter(created_at__gte=now - timedelta(seconds=window_s))
    rate_count = recent.filter(created_at__gte=now - timedelta(seconds=rate_window_s)).count()
    per_slo = list(
        recent.filter(slo_met__isnull=False)
        .exclude(slo="")
        .values("slo")
        .annotate(outcomes=Count("id"), met=Count("id", filter=Q(slo_met=True)))
        .order_by("slo")
    )
    standing = slo_standing(slos=[row["slo"] for row in per_slo], now=now)
    per_policy = (
        recent.values("policy_name", "policy_version", "arm")
        .annotate(decisions=Count("id"))
        .order_by("-decisions")
    )
    return {
        "window_s": window_s,
        "decisions_per_s": rate_count / rate_window_s,
        "decisions_in_window": recent.count(),
        "slo_attainment": [
            {
                "slo": row["slo"],
                "outcomes": row["outcomes"],
                "met": row["met"],
                "attainment": row["met"] / row["outcomes"],
                # An SLO deleted since its outcomes has no objective or rules left to judge by.
                **standing.get(row["slo"], _NOT_JUDGED),
            }
            for row in per_slo
        ],
        "by_policy": [
            {
                "policy": f"{r['policy_name']}@{r['policy_version']}",
                "arm": r["arm"],
                "decisions": r["decisions"],
            }
            for r in per_policy
        ],
    }
