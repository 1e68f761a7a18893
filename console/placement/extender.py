"""Kubernetes scheduler extender (kube-scheduler's HTTP extender protocol, k8s.io/kube-scheduler
/extender/v1 types, JSON keys as the Go field names).

kube-scheduler posts `ExtenderArgs` — `{"Pod": {...}, "Nodes": {"items": [...]} | null,
"NodeNames": [...] | null}` — to `/extender/filter` (answered with `ExtenderFilterResult`)
and `/extender/prioritize` (answered with a `HostPriorityList` of `{"Host", "Score"}`, scores
0..10 = extenderv1.MaxExtenderPriority). With `nodeCacheCapable: true` it sends `NodeNames`
and expects `NodeNames` back; otherwise full `Nodes`.

The pod says what it serves through annotations (README "Kubernetes scheduler extender"):
  locus.io/model (required to take part), locus.io/slo, locus.io/source or locus.io/site,
  locus.io/prompt-tokens (default 1024), locus.io/max-output-tokens (default 256).
A Kubernetes node is the Locus node of the same name, or the one whose label
`kubernetes.io/hostname` names it. Pods without `locus.io/model` are not Locus's business:
every node passes and scores 0.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from console.access.authentication import ApiKeyAuthentication
from console.access.roles import roles_of
from console.placement.engine.core import DecisionInput, UnknownName
from console.placement.engine.runtime import runtime

ANNOTATION = "locus.io/"
MAX_PRIORITY = 10
HOSTNAME_LABEL = "kubernetes.io/hostname"


class ExtenderError(ValueError):
    pass


def _args(request: HttpRequest) -> tuple[dict[str, Any], list[str], dict[str, Any] | None]:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError as exc:
        raise ExtenderError(f"body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ExtenderError("body must be an ExtenderArgs object")
    pod = body.get("Pod") or {}
    nodes = body.get("Nodes")
    if body.get("NodeNames") is not None:
        return pod, [str(n) for n in body["NodeNames"]], None
    if nodes is not None:
        items = nodes.get("items") or []
        return pod, [str((item.get("metadata") or {}).get("name", "")) for item in items], nodes
    raise ExtenderError("ExtenderArgs needs Nodes or NodeNames")


def _pod_input(pod: dict[str, Any]) -> DecisionInput | None:
    notes = (pod.get("metadata") or {}).get("annotations") or {}
    model = notes.get(ANNOTATION + "model")
    if not model:
        return None
    try:
        prompt = int(notes.get(ANNOTATION + "prompt-tokens", 1024))
        output = int(notes.get(ANNOTATION + "max-output-tokens", 256))
    except ValueError as exc:
        raise ExtenderError(f"bad token-count annotation: {exc}") from exc
    source = notes.get(ANNOTATION + "source")
    site = notes.get(ANNOTATION + "site")
    if source is None and site is None:
        raise ExtenderError("a pod with locus.io/model needs locus.io/source or locus.io/site")
    return DecisionInput(
        model=model,
        prompt_tokens=prompt,
        max_output_tokens=output,
        source=source,
        site=None if source else site,
        slo=notes.get(ANNOTATION + "slo"),
    )


def _locus_names(k8s_names: list[str]) -> dict[str, str]:
    """Kubernetes node name -> Locus node name, for the nodes Locus knows."""
    snapshot = runtime().engine.snapshot
    assert snapshot is not None
    by_hostname = {
        n.labels.get(HOSTNAME_LABEL): n.name
        for n in snapshot.topology.nodes
        if n.labels.get(HOSTNAME_LABEL)
    }
    known = set(snapshot.topology.node_by_name)
    out = {}
    for name in k8s_names:
        if name in known:
            out[name] = name
        elif name in by_hostname:
            out[name] = by_hostname[name]
    return out


def _judge(pod: dict[str, Any], names: list[str]) -> tuple[dict[str, float], dict[str, str]]:
    """Scores (0..1) for the Kubernetes nodes that may serve the pod, reasons for the rest.

    Scores come from the active policy's ranking: policies' raw scales differ (costs,
    logits), ranks do not."""
    rt = runtime()
    rt.ensure_started()
    body = _pod_input(pod)
    if body is None:
        return {n: 0.0 for n in names}, {}
    mapping = _locus_names(names)
    try:
        best_first, rejected = rt.engine.rank(body, set(mapping.values()))
    except UnknownName as exc:
        raise ExtenderError(str(exc)) from exc
    position = {name: i for i, name in enumerate(best_first)}
    failed = {k: "not a Locus node" for k in names if k not in mapping}
    failed |= {k: rejected[v] for k, v in mapping.items() if v in rejected}
    n = len(best_first)
    scores = {k: 1.0 - position[v] / n for k, v in mapping.items() if v in position}
    return scores, failed


def _authorised(request: HttpRequest) -> bool:
    if getattr(settings, "LOCUS_EXTENDER_ALLOW_ANONYMOUS", True):
        return True
    from rest_framework.request import Request

    try:
        result = ApiKeyAuthentication().authenticate(Request(request))
    except Exception:
        return False
    return result is not None and bool(roles_of(result[0]) & {"service", "operator"})


@csrf_exempt
@require_POST
def filter_view(request: HttpRequest) -> JsonResponse:
    if not _authorised(request):
        return JsonResponse({"Error": "a service API key is required"}, status=401)
    try:
        pod, names, nodes = _args(request)
        scores, failed = _judge(pod, names)
    except ExtenderError as exc:
        return JsonResponse(
            {
                "Nodes": None,
                "NodeNames": None,
                "FailedNodes": {},
                "FailedAndUnresolvableNodes": {},
                "Error": str(exc),
            }
        )
    passing = [n for n in names if n in scores]
    unresolvable = {
        n: r
        for n, r in failed.items()
        if r in ("model_not_served", "residency", "not a Locus node")
    }
    result: dict[str, Any] = {
        "FailedNodes": {n: r for n, r in failed.items() if n not in unresolvable},
        "FailedAndUnresolvableNodes": unresolvable,
        "Error": "",
    }
    if nodes is None:
        result |= {"Nodes": None, "NodeNames": passing}
    else:
        items = [
            i for i in nodes.get("items") or [] if (i.get("metadata") or {}).get("name") in scores
        ]
        result |= {"Nodes": {**nodes, "items": items}, "NodeNames": None}
    return JsonResponse(result)


@csrf_exempt
@require_POST
def prioritize_view(request: HttpRequest) -> JsonResponse:
    if not _authorised(request):
        return JsonResponse({"Error": "a service API key is required"}, status=401)
    try:
        pod, names, _ = _args(request)
        scores, _failed = _judge(pod, names)
    except ExtenderError as exc:
        return JsonResponse({"Error": str(exc)}, status=400)
    return JsonResponse(
        [{"Host": n, "Score": round(scores.get(n, 0.0) * MAX_PRIORITY)} for n in names], safe=False
    )
