"""Kubernetes scheduler extender (kube-scheduler's HTTP extender protocol, k8s.io/kube-scheduler
/extender/v1 types, JSON keys as the Go field names).

kube-scheduler posts `ExtenderArgs` — `{"Pod": {...}, "Nodes": {"items": [...]} | null,
"NodeNames": [...] | null}` — to `/extender/filter` (answered with `ExtenderFilterResult`)
and `/extender/prioritize` (answered with a `HostPriorityList` of `{"Host", "Score"}`, scores
0..10 = extenderv1.MaxExtenderPriority). With `nodeCacheCapable: true` it sends `NodeNames`
and expects `NodeNames` back; otherwise full `Nodes`.

The pod says what it serves through annotations (docs/api.md, "The Kubernetes scheduler extender"):
  locus.io/model (required to take part), locus.io/slo, locus.io/source or locus.io/site,
  locus.io/prompt-tokens (default 1024), locus.io/max-output-tokens (default 256).
A Kubernetes node is the Locus node of the same name, or the one whose label
`kubernetes.io/hostname` names it. Pods without `locus.io/model` are not Locus's business:
every node passes and scores 0.

Malformed input (ExtenderArgs of the wrong shape, annotations the placements API would reject)
never answers 500: filter answers 200 with `Error` set, prioritize 400 with the API's error
shape (why each, at the views).
"""

from __future__ import annotations

import hmac
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from pydantic import ValidationError

from console.access.authentication import ApiKeyAuthentication
from console.access.roles import roles_of
from console.api import jsonbody
from console.api.errors import error_body
from console.placement.doors.bodies import PlacementRequestBody
from console.placement.doors.handlers import decision_input
from console.placement.engine.inputs import DecisionInput, UnknownName
from console.placement.engine.runtime import runtime

ANNOTATION = "locus.io/"
MAX_PRIORITY = 10
HOSTNAME_LABEL = "kubernetes.io/hostname"
DEFAULT_PROMPT_TOKENS = 1024
DEFAULT_MAX_OUTPUT_TOKENS = 256
# The placements API's field (PlacementRequestBody) behind each pod annotation.
ANNOTATION_OF = {
    "model": ANNOTATION + "model",
    "source": ANNOTATION + "source",
    "site": ANNOTATION + "site",
    "slo": ANNOTATION + "slo",
    "prompt_tokens": ANNOTATION + "prompt-tokens",
    "max_output_tokens": ANNOTATION + "max-output-tokens",
}
ANNOTATIONS_PATH = ("Pod", "metadata", "annotations")


class ExtenderError(ValueError):
    """Malformed `ExtenderArgs` or pod annotations. `errors` nests the messages along the
    field's path, as the API's error shape does (`{"Pod": {"metadata": {...}}}`)."""

    def __init__(self, message: str, errors: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or {}


def _invalid(problems: list[tuple[tuple[str, ...], str]], message: str) -> ExtenderError:
    errors: dict[str, Any] = {}
    for path, detail in problems:
        node = errors
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node.setdefault(path[-1], []).append(detail)
    return ExtenderError(message, errors)


def _field_error(path: tuple[str, ...], detail: str) -> ExtenderError:
    return _invalid([(path, detail)], f"{'.'.join(path)}: {detail}")


def _annotation_error(problems: list[tuple[str, str]]) -> ExtenderError:
    """`problems`: (annotation name, message); the message names every annotation."""
    return _invalid(
        [((*ANNOTATIONS_PATH, name), detail) for name, detail in problems],
        "; ".join(f"bad annotation {name}: {detail}" for name, detail in problems),
    )


def _args(request: HttpRequest) -> tuple[dict[str, Any], list[str], dict[str, Any] | None]:
    """The pod, the Kubernetes node names and (without `nodeCacheCapable`) the NodeList, each
    checked against its extender/v1 type: JSON of any other shape is the caller's error."""
    try:
        body = jsonbody.loads(request.body or b"{}")
    except jsonbody.JsonBodyError as exc:
        if "body" in exc.errors:
            raise ExtenderError(f"body is not JSON: {exc.message}") from exc
        raise ExtenderError(exc.message, exc.errors) from exc
    if not isinstance(body, dict):
        raise _invalid(
            [(("non_field_errors",), "must be an ExtenderArgs object")],
            "body must be an ExtenderArgs object",
        )
    pod = body.get("Pod")
    if not isinstance(pod, dict):
        raise _field_error(("Pod",), "must be a Pod object")
    node_names = body.get("NodeNames")
    if node_names is not None:
        if not isinstance(node_names, list) or not all(
            isinstance(n, str) and n for n in node_names
        ):
            raise _field_error(("NodeNames",), "must be a list of node names")
        return pod, node_names, None
    nodes = body.get("Nodes")
    if nodes is None:
        raise _invalid(
            [(("non_field_errors",), "Give Nodes or NodeNames.")],
            "ExtenderArgs needs Nodes or NodeNames",
        )
    if not isinstance(nodes, dict):
        raise _field_error(("Nodes",), "must be a NodeList object")
    items = nodes.get("items")
    if items is None:  # Go marshals an empty NodeList's items as null
        items = []
    if not isinstance(items, list):
        raise _field_error(("Nodes", "items"), "must be a list of Node objects")
    names = []
    for i, item in enumerate(items):
        meta = item.get("metadata") if isinstance(item, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            raise _field_error(
                ("Nodes", "items", str(i), "metadata", "name"), "every Node needs a name"
            )
        names.append(name)
    return pod, names, {**nodes, "items": items}


def _pod_input(pod: dict[str, Any]) -> DecisionInput | None:
    """The decision request the pod's annotations describe, validated as the placements API
    validates its body (PlacementRequestBody), or None for a pod without `locus.io/model`."""
    meta = pod.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise _field_error(("Pod", "metadata"), "must be an ObjectMeta object")
    notes = meta.get("annotations")
    if notes is None:
        notes = {}
    if not isinstance(notes, dict):
        raise _field_error(ANNOTATIONS_PATH, "must be an object of strings")
    model = notes.get(ANNOTATION_OF["model"])
    if model is None or model == "":
        return None
    source = notes.get(ANNOTATION_OF["source"])
    site = notes.get(ANNOTATION_OF["site"])
    if source is None and site is None:
        raise _annotation_error(
            [
                (
                    ANNOTATION_OF["source"],
                    "a pod with locus.io/model needs locus.io/source or locus.io/site",
                )
            ]
        )
    data = {
        "model": model,
        "source": source,
        "site": None if source is not None else site,  # the source's site wins
        "slo": notes.get(ANNOTATION_OF["slo"]),
        "prompt_tokens": notes.get(ANNOTATION_OF["prompt_tokens"], DEFAULT_PROMPT_TOKENS),
        "max_output_tokens": notes.get(
            ANNOTATION_OF["max_output_tokens"], DEFAULT_MAX_OUTPUT_TOKENS
        ),
    }
    try:
        body = PlacementRequestBody.model_validate(data, strict=False)  # annotations are strings
    except ValidationError as exc:
        raise _annotation_error(
            [
                (
                    ANNOTATION_OF.get(str(e["loc"][0]) if e["loc"] else "source", ANNOTATION),
                    str(e["msg"]).removeprefix("Value error, "),
                )
                for e in exc.errors()
            ]
        ) from None
    return decision_input(body)


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


def _judge(body: DecisionInput | None, names: list[str]) -> tuple[dict[str, float], dict[str, str]]:
    """Scores (0..1) for the Kubernetes nodes that may serve the pod, reasons for the rest.

    Scores come from the active policy's ranking: policies' raw scales differ (costs,
    logits), ranks do not. The engine's `rank` applies its live filter to the offered nodes:
    open breakers exclude, stale telemetry excludes only while a fresh offered node is left."""
    if body is None:
        return {n: 0.0 for n in names}, {}
    rt = runtime()
    rt.ensure_started()
    mapping = _locus_names(names)
    try:
        best_first, rejected = rt.engine.rank(body, set(mapping.values()))
    except UnknownName as exc:
        raise _annotation_error([(ANNOTATION + exc.field, str(exc))]) from exc
    position = {name: i for i, name in enumerate(best_first)}
    failed = {k: "not a Locus node" for k in names if k not in mapping}
    failed |= {k: rejected[v] for k, v in mapping.items() if v in rejected}
    n = len(best_first)
    scores = {k: 1.0 - position[v] / n for k, v in mapping.items() if v in position}
    return scores, failed


def _authorised(request: HttpRequest) -> bool:
    """LOCUS_EXTENDER_TOKEN, when set, is the one credential (kube-scheduler cannot send a
    header itself: a proxy beside it adds `Authorization: Bearer <token>`); otherwise the
    extender is open, or wants a service or operator API key (docs/operations.md)."""
    token = settings.LOCUS_EXTENDER_TOKEN
    if token:
        scheme, _, sent = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            sent.strip().encode(), token.encode()
        )
    if settings.LOCUS_EXTENDER_ALLOW_ANONYMOUS:
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
        return JsonResponse(
            {"Error": "the extender's token or a service API key is required"}, status=401
        )
    try:
        pod, names, nodes = _args(request)
        scores, failed = _judge(_pod_input(pod), names)
    except ExtenderError as exc:
        # Malformed input answers 200 with `Error` set, not a 4xx: kube-scheduler's
        # HTTPExtender.Filter treats both as the extender failing (and honours `ignorable`
        # alike), but on a non-200 `send` reports only the status code and never reads the
        # body, while `Error` becomes the error itself: the scheduler's log line and, for a
        # non-ignorable extender, the pod's FailedScheduling event name the bad field.
        return JsonResponse(
            {
                "Nodes": None,
                "NodeNames": None,
                "FailedNodes": {},
                "FailedAndUnresolvableNodes": {},
                "Error": exc.message,
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
        items = [i for i in nodes["items"] if i["metadata"]["name"] in scores]
        result |= {"Nodes": {**nodes, "items": items}, "NodeNames": None}
    return JsonResponse(result)


@csrf_exempt
@require_POST
def prioritize_view(request: HttpRequest) -> JsonResponse:
    if not _authorised(request):
        return JsonResponse(
            {"Error": "the extender's token or a service API key is required"}, status=401
        )
    try:
        pod, names, _ = _args(request)
        scores, _failed = _judge(_pod_input(pod), names)
    except ExtenderError as exc:
        # A HostPriorityList has no error field: malformed input answers 400 with the API's
        # error shape. kube-scheduler logs the failed call and schedules without this
        # extender's scores (prioritize errors never fail a pod, `ignorable` or not).
        return JsonResponse(error_body(exc.message, exc.errors), status=400)
    return JsonResponse(
        [{"Host": n, "Score": round(scores.get(n, 0.0) * MAX_PRIORITY)} for n in names], safe=False
    )
