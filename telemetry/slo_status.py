"""Reads of where each SLO stands under its burn-rate rules (telemetry/slo_rules.py): the
rules with every SLO's burn rates now (GET /api/v1/breaches/burn-rates), and one SLO's
objective, burn rates and open breach for the overview's SLO tiles.

Both judge through `slo_windows.verdicts`, as the breach evaluator does, so a tile, the
burn-rates table and the breaches it opens read the same windows the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from telemetry import conf, slo_rules, slo_windows
from telemetry.breaches import slo_cache
from telemetry.models import BreachStatus, SlaBreach

# The worse of two open breaches of one SLO: a page outranks a ticket.
_LEVELS = (slo_rules.PAGE, slo_rules.TICKET)


def _rules() -> list[dict[str, Any]]:
    return [
        {
            "severity": r.severity,
            "factor": r.factor,
            "long_window_s": r.long_s,
            "short_window_s": r.short_s,
            "hold_s": r.hold_s,
            "clear_s": r.clear_s,
        }
        for r in slo_rules.rules()
    ]


def slo_burn_rates(*, now: datetime) -> dict[str, Any]:
    """The burn-rate rules and, per SLO and SLI, each rule's burn rates over its windows
    ending at `now` and whether it holds."""
    slos: dict[tuple[str, str], dict[str, Any]] = {}
    for v in slo_windows.verdicts(targets=slo_cache.all(), now=now):
        entry = slos.setdefault(
            (v.slo, v.sli.name),
            {"slo": v.slo, "sli": v.sli.name, "objective": v.sli.objective, "rules": []},
        )
        entry["rules"].append(
            {
                "severity": v.rule.severity,
                "requests": v.judgement.requests,
                "bad": v.judgement.bad,
                "long_burn_rate": v.judgement.long_burn,
                "short_burn_rate": v.judgement.short_burn,
                "holds": v.judgement.holds,
            }
        )
    return {
        "period_days": conf.slo_period_days(),
        "min_requests": conf.slo_min_requests(),
        "evaluated_every_s": conf.slo_eval_interval_seconds(),
        "rules": _rules(),
        "slos": list(slos.values()),
    }


def slo_standing(*, slos: Iterable[str], now: datetime) -> dict[str, dict[str, Any]]:
    """For each of `slos` that is defined: the objective of its `within_targets` SLI (what
    the tiles' attainment measures), that SLI's burn rate per rule over the rule's windows
    ending at `now`, and its worst open breach on any SLI (`open_breach`: page, ticket or
    None, with `open_breach_metric`). SLOs not defined (deleted since) are left out."""
    known = slo_cache.all()
    targets = {name: known[name] for name in slos if name in known}
    standing: dict[str, dict[str, Any]] = {
        name: {
            "objective": slo_rules.P95,
            "burn_rates": [],
            "open_breach": None,
            "open_breach_metric": None,
        }
        for name in targets
    }
    for v in slo_windows.verdicts(targets=targets, now=now):
        if v.sli.name != slo_rules.WITHIN_TARGETS:
            continue
        standing[v.slo]["objective"] = v.sli.objective
        standing[v.slo]["burn_rates"].append(
            {
                "severity": v.rule.severity,
                "factor": v.rule.factor,
                "long_window_s": v.rule.long_s,
                "short_window_s": v.rule.short_s,
                "requests": v.judgement.requests,
                "long_burn_rate": v.judgement.long_burn,
                "short_burn_rate": v.judgement.short_burn,
                "holds": v.judgement.holds,
            }
        )
    open_breaches = SlaBreach.objects.filter(
        status=BreachStatus.OPEN, slo__in=list(targets), severity__in=_LEVELS
    ).values_list("slo", "severity", "metric")
    for slo, severity, metric in sorted(open_breaches, key=lambda b: _LEVELS.index(b[1])):
        if standing[slo]["open_breach"] is None:
            standing[slo]["open_breach"] = severity
            standing[slo]["open_breach_metric"] = metric
    return standing
