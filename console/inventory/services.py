"""Writes to the inventory: importing topology files, registering nodes first heard of
elsewhere, and changing node state."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import models as dj_models
from django.db import transaction
from django.db.models import ProtectedError
from django.utils import timezone

from console.api.errors import ApplicationError
from console.inventory.choices import NodeState
from console.inventory.importing import ImportSummary, inventory_import
from console.inventory.models import (
    Accelerator,
    FleetSettings,
    Node,
    NodeStateChange,
    Profile,
    ServedModel,
    Site,
    WorkloadShare,
)
from console.inventory.names import name_problem
from console.inventory.selectors import inventory_problems
from console.live.events import send_event
from optimizer.errors import InputFileError
from optimizer.topology import Topology

# -- keeping the inventory a valid topology ------------------------------------------------
#
# Every write to the inventory (an API create, update or delete of any resource, or a topology
# import) runs in one transaction that, after the write, validates the whole inventory as a
# topology (optimizer/topology.py, the checks a topology file gets) and rolls back if the write
# made it invalid. So the decision engine, `GET /api/v1/topology`, `dump_topology`, training
# and evaluations, which all build their Topology from the inventory, never meet one they
# cannot use.


def _lock_inventory() -> None:
    """Serialize inventory writes: two writes each valid alone can be invalid together (a
    profile deleted while a node that needs it is created). Every write also bumps the fleet
    revision on this row, so the lock costs nothing extra."""
    FleetSettings.load()
    FleetSettings.objects.select_for_update().filter(pk=1).first()


@contextmanager
def inventory_write() -> Iterator[None]:
    """Run an inventory write in a transaction that is rolled back, with a 400 listing the
    problems, if the write leaves the inventory an invalid topology.

    A write is refused if it adds a problem. From a valid inventory (the normal case) that means
    the inventory stays valid; an inventory still being built entry by entry (no nodes yet, say)
    is not a valid topology either, and may be completed as long as no write makes it worse.
    """
    with transaction.atomic():
        _lock_inventory()
        before = set(inventory_problems())
        yield
        added = [p for p in inventory_problems() if p not in before]
        if added:
            raise ApplicationError(
                "The change would leave the inventory an invalid topology; nothing was changed.",
                errors={"topology": added},
            )


def inventory_dependents(instance: dj_models.Model) -> list[str]:
    """What still uses an inventory entry, beyond the protected foreign keys the database
    reports itself (a node's site or accelerator, a source's site or SLO): deleting these would
    silently change other entries instead of failing."""
    users: list[str] = []
    if isinstance(instance, ServedModel):
        users += [n.name for n in instance.nodes.order_by("name")]
        if WorkloadShare.objects.filter(model=instance).exists():
            users.append("workload")
    elif isinstance(instance, Profile):
        users += [
            n.name
            for n in Node.objects.filter(
                accelerator_id=instance.accelerator_id, served_models=instance.model_id
            ).order_by("name")
        ]
    return users


def inventory_delete(instance: dj_models.Model) -> None:
    """Delete one inventory entry, refused (409, `referenced_by`) while anything uses it and
    (400) if the inventory would be left invalid."""
    with inventory_write():
        users = inventory_dependents(instance)
        if users:
            # The same error, rendered the same way (409, `referenced_by`), as a protected
            # foreign key's; the handler only needs each user's str().
            raise ProtectedError(f"{instance} is still in use.", set(users))  # type: ignore[arg-type]
        instance.delete()


def topology_name_problems(topology: Topology, source: str) -> list[str]:
    """Entries of a topology whose name breaks the inventory's name rule (names.py)."""
    sections: dict[str, tuple[Any, ...]] = {
        "sites": topology.sites,
        "accelerators": topology.accelerators,
        "models": topology.models,
        "nodes": topology.nodes,
        "sources": topology.sources,
        "slos": topology.slos,
    }
    problems = []
    for section, entries in sections.items():
        for i, entry in enumerate(entries):
            problem = name_problem(entry.name)
            if problem:
                problems.append(f"{source}: {section}[{i}] ({entry.name}): field 'name': {problem}")
    return problems


def topology_import(
    *, topology: Topology, prune: bool = False, source: str = "topology"
) -> ImportSummary:
    """Bring the inventory in line with a validated topology, in one transaction.

    Entries are matched by name and updated in place, so loading the same file twice changes
    nothing. A node's operational `state` is only set from the file when the file states it:
    re-loading the fleet description must not bring a drained node back into service. With
    `prune`, entries absent from the file are deleted (otherwise they are kept).

    Raises InputFileError, and imports nothing, if a name breaks the name rule or if the
    inventory would not be a valid topology afterwards (entries kept from before, without
    `prune`, may not fit the imported ones). `source` names the file in those problems.
    """
    problems = topology_name_problems(topology, source)
    if problems:
        raise InputFileError(source, problems)
    with transaction.atomic():
        _lock_inventory()
        summary = inventory_import(topology, prune)
        after = inventory_problems()
        if after:
            raise InputFileError(
                source,
                [f"{source}: the inventory would be invalid after the import: {p}" for p in after],
            )
    return summary


# Which state changes an operator may make, and from where (a state machine).
NODE_TRANSITIONS: dict[str, set[str]] = {
    "drain": {NodeState.ACTIVE, NodeState.CORDONED},
    "cordon": {NodeState.ACTIVE},
    "uncordon": {NodeState.CORDONED, NodeState.DRAINING, NodeState.DOWN},
    "mark_down": {NodeState.ACTIVE, NodeState.CORDONED, NodeState.DRAINING},
}
TARGET_STATE: dict[str, str] = {
    "drain": NodeState.DRAINING,
    "cordon": NodeState.CORDONED,
    "uncordon": NodeState.ACTIVE,
    "mark_down": NodeState.DOWN,
}


def node_register_cordoned(
    *, names: Iterable[str], site: str, accelerator: str, reason: str, labels: dict[str, str]
) -> bool:
    """Add the nodes of `names` the inventory lacks, on `site` with `accelerator`, cordoned
    until an operator looks (telemetry registers nodes it hears from first this way); nodes
    that exist are left alone. False, adding nothing, when the site or the accelerator does
    not exist."""
    site_row = Site.objects.filter(name=site).first()
    accelerator_row = Accelerator.objects.filter(name=accelerator).first()
    if site_row is None or accelerator_row is None:
        return False
    for name in sorted(names):
        Node.objects.get_or_create(
            name=name,
            defaults={
                "site": site_row,
                "accelerator": accelerator_row,
                "usd_per_hour": 0.0,
                "state": NodeState.CORDONED,
                "state_reason": reason,
                "labels": labels,
            },
        )
    return True


# Actions that take a node out of service on purpose need a reason, so whoever finds it
# drained or cordoned later knows why (issue #17: "drain and cordon require a reason").
REASON_REQUIRED = frozenset({"drain", "cordon"})


@transaction.atomic
def node_change_state(*, node: Node, action: str, actor: str, reason: str = "") -> Node:
    """Drain, cordon, uncordon or mark a node down as `actor`; refuses moves that make no
    sense and drains or cordons without a reason; every change is audited."""
    if action not in TARGET_STATE:
        raise ApplicationError(f"Unknown node action {action!r}.")
    reason = reason.strip()
    if action in REASON_REQUIRED and not reason:
        raise ApplicationError(
            f"Say why you {action} node {node.name!r}.",
            errors={"reason": [f"A reason is required to {action} a node."]},
        )
    node = Node.objects.select_for_update().get(pk=node.pk)
    if node.state not in NODE_TRANSITIONS[action]:
        raise ApplicationError(
            f"Cannot {action.replace('_', ' ')} node {node.name!r}: it is {node.state}.",
            status_code=409,
        )
    previous = node.state
    node.state = TARGET_STATE[action]
    node.state_reason = reason
    node.state_changed_at = timezone.now()
    node.state_changed_by = actor
    node.save(update_fields=["state", "state_reason", "state_changed_at", "state_changed_by"])
    NodeStateChange.objects.create(
        node=node,
        action=action,
        from_state=previous,
        to_state=node.state,
        reason=reason,
        actor=actor,
        at=node.state_changed_at,
    )
    send_event(
        "node.state",
        {
            "node": node.name,
            "state": node.state,
            "previous": previous,
            "reason": reason,
            "by": actor,
            "ts": node.state_changed_at.isoformat(),
        },
    )
    return node
