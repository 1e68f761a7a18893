"""Every API route × every persona against one table of expectations (docs/contracts.md §4).

The table below is the access policy. A route missing from it fails the test, so a new
endpoint cannot ship without a decided rule.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.conftest import ROLES

pytestmark = pytest.mark.django_db

R = frozenset({"viewer", "operator", "admin"})  # read
W = frozenset({"operator", "admin"})  # write inventory
A = frozenset({"admin"})
S = frozenset({"service", "operator", "admin"})  # service endpoints
EVERYONE = frozenset(ROLES)


def _crud(read: frozenset[str] = R, write: frozenset[str] = W) -> dict[str, dict[str, Any]]:
    return {
        "list": {"GET": read, "POST": write},
        "detail": {"GET": read, "PUT": write, "PATCH": write, "DELETE": write},
    }


# route name -> {HTTP method: roles allowed}
EXPECTED: dict[str, dict[str, frozenset[str]]] = {
    "me": {"GET": EVERYONE},
    "apikey-list": {"GET": A, "POST": A},
    "apikey-detail": {"GET": A},
    "apikey-revoke": {"POST": A},
    "topology": {"GET": R, "PUT": W},
    "node-drain": {"POST": W},
    "node-cordon": {"POST": W},
    "node-uncordon": {"POST": W},
    "node-mark-down": {"POST": W},
    "node-state-changes": {"GET": R},
    "telemetry-samples": {"POST": S},
    "telemetry-prometheus": {"POST": S},
    "telemetry-remote-write": {"POST": S},
    "telemetry-latest": {"GET": R},
    "node-telemetry": {"GET": R},
    "node-latency": {"GET": R},
    "node-why": {"GET": R},
    "breach-list": {"GET": R},
    "breach-burn-rates": {"GET": R},
    "placements": {"POST": S},
    "placements-batch": {"POST": S},
    "placement-outcome": {"POST": S},
    "decision-list": {"GET": R},
    "decision-detail": {"GET": R},
    "breakers": {"GET": R},
    "overview": {"GET": R},
    "series-fleet": {"GET": R},
    "rollout": {"GET": R},
    "policyversion-list": {"GET": R, "POST": A},
    "policyversion-detail": {"GET": R},
    "policytransition-list": {"GET": R},
    "trainingrun-list": {"GET": R, "POST": A},
    "trainingrun-detail": {"GET": R},
    "observations": {"GET": R},
    "calibrationrun-list": {"GET": R, "POST": W},
    "calibrationrun-detail": {"GET": R},
    "calibrationrun-apply": {"POST": W},
    "calibrationrun-discard": {"POST": W},
    # Exploration probes send live traffic: a canary's rule, admins act (docs/twin.md).
    "explorationprobe-list": {"GET": R, "POST": A},
    "explorationprobe-detail": {"GET": R},
    "explorationprobe-approve": {"POST": A},
    "explorationprobe-start": {"POST": A},
    "explorationprobe-abort": {"POST": A},
    **{
        f"policyversion-{verb}": {"POST": A}
        for verb in ("approve", "shadow", "canary", "promote", "rollback", "evaluate")
    },
}
for basename in (
    "site",
    "link",
    "accelerator",
    "servedmodel",
    "profile",
    "node",
    "slo",
    "source",
    "workloadshare",
):
    for kind, methods in _crud().items():
        EXPECTED[f"{basename}-{kind}"] = methods


def _api_routes() -> dict[str, tuple[str, Any]]:
    """name -> (regex route, callback) for every route under /api/v1/."""
    found: dict[str, tuple[str, Any]] = {}

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            route = prefix + str(p.pattern)
            if isinstance(p, URLResolver):
                walk(p.url_patterns, route)
            elif isinstance(p, URLPattern) and route.startswith("api/v1/"):
                found[p.name or route] = (route, p.callback)

    walk(get_resolver().url_patterns, "")
    return found


def _methods(callback: Any) -> set[str]:
    actions = getattr(callback, "actions", None)
    if actions:
        # DRF adds `head` to a viewset's actions on its first GET; HEAD follows GET's rule.
        return {m.upper() for m in actions} - {"HEAD", "OPTIONS"}
    view = callback.view_class
    return {
        m.upper()
        for m in view.http_method_names
        if hasattr(view, m) and m not in ("options", "head")
    }


def test_every_api_route_has_a_rule() -> None:
    routes = _api_routes()
    missing = sorted(set(routes) - set(EXPECTED))
    assert not missing, f"routes without an access rule in EXPECTED: {missing}"
    for name, (_, callback) in routes.items():
        assert _methods(callback) == set(EXPECTED[name]), name


def _url_for(name: str, ids: dict[str, str]) -> str:
    """The route's URL, its one parameter (if any) filled from `ids` by resource basename."""
    import re

    from django.urls import reverse

    route, _ = _api_routes()[name]
    params = [a or b for a, b in re.findall(r"\(\?P<(\w+)>|<(?:\w+:)?(\w+)>", route)]
    if not params:
        return reverse(name)
    basename = name.split("-", 1)[0]
    return reverse(name, kwargs={params[0]: ids[basename]})


def _recorded_decision() -> str:
    from django.utils import timezone

    from console.placement.models import DecisionRecord

    record, _ = DecisionRecord.objects.get_or_create(
        pk="d" * 32,
        defaults={
            "created_at": timezone.now(),
            "source_site": "muc-edge",
            "model": "llama-3.1-8b",
            "prompt_tokens": 1,
            "max_output_tokens": 1,
            "node": "muc-l4-1",
            "node_site": "muc-edge",
            "policy_name": "random",
            "policy_version": "builtin",
            "latency_us": 1.0,
        },
    )
    return record.pk


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_route_answers_each_persona_as_the_table_says(
    name: str, fleet: Any, client_for: Any
) -> None:
    from django.utils import timezone

    from console.access.services import api_key_create
    from console.inventory.models import Link, Profile, WorkloadShare
    from console.policies.models import PolicyVersion, TrainingRun
    from console.twin.models import CalibrationRun, ExplorationProbe

    ids = {
        "site": "muc-edge",
        "accelerator": "l4",
        "servedmodel": "llama-3.1-8b",
        "node": "muc-l4-1",
        "slo": "batch",
        "source": "us-batch",
        "link": str(Link.objects.first().pk),
        "profile": str(Profile.objects.first().pk),
        "workloadshare": str(WorkloadShare.objects.first().pk),
        "apikey": str(api_key_create(name="target", role="viewer").api_key.pk),
        "placement": _recorded_decision(),
        "decision": _recorded_decision(),
        "policyversion": str(
            PolicyVersion.objects.create(
                name="p", version="1", kind="heuristic", heuristic="random"
            ).pk
        ),
        "trainingrun": str(TrainingRun.objects.create().pk),
        "calibrationrun": str(
            CalibrationRun.objects.create(
                since=timezone.now(), until=timezone.now(), min_samples=1, requested_by_name="x"
            ).pk
        ),
        "explorationprobe": str(
            ExplorationProbe.objects.create(
                share=0.01, max_requests=1, duration_s=60.0, min_observations=1, reason="x"
            ).pk
        ),
    }
    url = _url_for(name, ids)
    clients = {role: client_for(role) for role in (None, *ROLES)}
    for method, allowed in EXPECTED[name].items():
        # Each persona tries the call; unauthorised ones must not reach the view at all.
        # Allowed personas go last, so a successful DELETE cannot hide a 403/401.
        ordered = [
            None,
            *[r for r in ROLES if r not in allowed],
            *[r for r in ROLES if r in allowed],
        ]
        for role in ordered:
            response = getattr(clients[role], method.lower())(url, {}, format="json")
            got = response.status_code
            if role is None:
                assert got == 401, f"anonymous {method} {url}: {got}"
                assert "message" in response.json()
            elif role in allowed:
                assert got not in (401, 403), f"{role} {method} {url}: {got} {response.content!r}"
            else:
                assert got == 403, f"{role} {method} {url}: {got}"
                assert "message" in response.json()
