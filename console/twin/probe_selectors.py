"""Reads for exploration probes (docs/twin.md, "Exploration probe"): which (node, model)
pairs a calibration could not see, what a probe sent, what its targets observed, and the
running probe as the decision engine's snapshot carries it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db.models import Count, QuerySet
from django.utils import timezone

from console.inventory.selectors import inventory_topology
from console.placement.models import DecisionRecord
from console.twin.choices import ProbeState
from console.twin.models import CalibrationRun, ExplorationProbe
from optimizer.decide.state.snapshot import Probe

# The report's statuses (optimizer/calibration/report.py) that mean "the data could not pin
# this down": too few requests, or requests that did not tell the values apart. `fitted` and
# `agrees_with_nominal` were seen well enough.
UNDER_OBSERVED = ("insufficient_data", "not_identifiable")
# The held values a probe can pin: its requests arrive alone on an idle node, so they give
# queue-free TTFT rows (the prefill rate, which the queue-free rule holds for want of them) and
# decodes in a batch of one (the base step). The per-sequence slope needs a spread of batch
# sizes, which a 1% share of traffic does not make, so a profile holding only that is not a
# target: on the twin suite it was 41 of the 45 profiles the held values would add.
PROBE_PINS = ("prefill_tokens_per_s", "decode_step_ms")


def held_values(entry: dict[str, Any]) -> list[dict[str, str]]:
    """The values of a report's profile entry the run held for want of data, in the report's
    order: each with its status and, for a prefill rate held for too few queue-free TTFT
    rows, the report's `reason`. A profile is `fitted` as soon as any value moved, so a
    prefill rate held beside fitted decode terms shows only here (issue #26)."""
    values = entry.get("values")
    held = []
    for name, value in values.items() if isinstance(values, dict) else ():
        if isinstance(value, dict) and value.get("status") in UNDER_OBSERVED:
            held.append({"value": name, "status": value["status"]})
            if isinstance(value.get("reason"), str):
                held[-1]["reason"] = value["reason"]
    return held


def under_observed_targets(run: CalibrationRun) -> list[dict[str, Any]]:
    """The (node, model) pairs of the inventory's fleet whose profile the run's report calls
    under-observed, or of which it holds for want of data a value a probe can pin
    (`PROBE_PINS`), in topology order: each with why (the profile's status and all its held
    values)."""
    why: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in run.report.get("profiles", []):
        if not isinstance(entry, dict):
            continue
        held = held_values(entry)
        pinnable = any(h["value"] in PROBE_PINS for h in held)
        if entry.get("status") in UNDER_OBSERVED or pinnable:
            why[(entry["model"], entry["accelerator"])] = {
                "profile_status": entry.get("status", ""),
                "held": held,
            }
    return [
        {"node": node.name, "model": model, **why[(model, node.accelerator)]}
        for node in inventory_topology().nodes
        for model in node.models
        if (model, node.accelerator) in why
    ]


def node_models() -> dict[str, list[str]]:
    """Every inventory node's served models."""
    return {node.name: list(node.models) for node in inventory_topology().nodes}


def probe_sent(probe: ExplorationProbe) -> int:
    """The decisions the probe sent that the database holds (`DecisionRecord.probe`)."""
    if probe.started_at is None:
        return 0
    # The partial index `decision_probe`: at most the probe's budget of rows is read.
    return DecisionRecord.objects.filter(probe=probe.pk).count()


def target_observations(probe: ExplorationProbe) -> dict[tuple[str, str], int]:
    """Per target (node, model), the measured requests it served since the probe started,
    whoever sent them: what the next calibration will have of it."""
    if probe.started_at is None:
        return {}
    nodes = {t["node"] for t in probe.targets}
    rows = (
        DecisionRecord.objects.filter(
            created_at__gte=probe.started_at, node__in=nodes, ttft_ms__isnull=False
        )
        .values("node", "model")
        .annotate(n=Count("id"))
    )
    counts: Counter[tuple[str, str]] = Counter()
    for row in rows:
        counts[(row["node"], row["model"])] += row["n"]
    return {(t["node"], t["model"]): counts[(t["node"], t["model"])] for t in probe.targets}


def probes() -> QuerySet[ExplorationProbe]:
    """Every probe, newest first, with its audit entries."""
    return ExplorationProbe.objects.prefetch_related("transitions")


def running_probe() -> Probe | None:
    """The running probe as the engine's snapshot carries it, with what is left of its budget
    (the decisions the database holds counted off); None when none runs or it has none left
    (`probe_check` then records it complete), or its deadline passed."""
    probe = ExplorationProbe.objects.filter(state=ProbeState.RUNNING).first()
    if probe is None or (probe.ends_at is not None and probe.ends_at <= timezone.now()):
        return None
    remaining = probe.max_requests - probe_sent(probe)
    if remaining <= 0:
        return None
    return Probe(
        probe_id=probe.pk,
        share=probe.share,
        targets=frozenset((t["node"], t["model"]) for t in probe.targets),
        remaining=remaining,
        max_requests=probe.max_requests,
    )


class TwinProbes:
    """The twin's side of `console.placement.probes.ProbeStore`."""

    def running(self) -> Probe | None:
        return running_probe()
