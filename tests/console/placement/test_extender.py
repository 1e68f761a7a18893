"""The Kubernetes scheduler extender with kube-scheduler's exact JSON (extender/v1 types)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

POD = {
    "metadata": {
        "name": "llm-worker-0",
        "namespace": "inference",
        "annotations": {
            "locus.io/model": "llama-3.1-8b",
            "locus.io/source": "munich-app",
            "locus.io/prompt-tokens": "2000",
            "locus.io/max-output-tokens": "200",
        },
    },
    "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai"}]},
}
K8S_NODES = ["muc-l4-1", "fra-h100-1", "use-h100-1", "muc-qwen-1", "gke-unknown-7"]


def _post(path: str, body: dict[str, Any]) -> Any:
    response = Client().post(path, json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def test_filter_with_node_names_keeps_only_nodes_that_may_serve(mixed_fleet: Any) -> None:
    result = _post("/extender/filter", {"Pod": POD, "Nodes": None, "NodeNames": K8S_NODES})
    assert sorted(result["NodeNames"]) == ["fra-h100-1", "muc-l4-1"]
    assert result["Nodes"] is None
    assert result["Error"] == ""
    assert result["FailedAndUnresolvableNodes"] == {
        "use-h100-1": "residency",
        "muc-qwen-1": "model_not_served",
        "gke-unknown-7": "not a Locus node",
    }
    assert result["FailedNodes"] == {}


def test_filter_with_full_nodes_returns_the_node_objects(mixed_fleet: Any) -> None:
    items = [{"metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}}} for n in K8S_NODES]
    result = _post(
        "/extender/filter",
        {"Pod": POD, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None},
    )
    assert result["NodeNames"] is None
    assert sorted(i["metadata"]["name"] for i in result["Nodes"]["items"]) == [
        "fra-h100-1",
        "muc-l4-1",
    ]


def test_filter_treats_a_drained_node_as_resolvable(mixed_fleet: Any) -> None:
    from console.inventory.models import Node

    Node.objects.filter(name="fra-h100-1").update(state="draining")
    mixed_fleet.refresh()
    result = _post("/extender/filter", {"Pod": POD, "NodeNames": K8S_NODES})
    assert result["FailedNodes"] == {"fra-h100-1": "node_draining"}


def test_prioritize_scores_every_node_from_0_to_10(mixed_fleet: Any) -> None:
    result = _post("/extender/prioritize", {"Pod": POD, "NodeNames": K8S_NODES})
    assert [r["Host"] for r in result] == K8S_NODES
    scores = {r["Host"]: r["Score"] for r in result}
    assert all(isinstance(s, int) and 0 <= s <= 10 for s in scores.values())
    assert max(scores["muc-l4-1"], scores["fra-h100-1"]) == 10
    assert scores["use-h100-1"] == scores["gke-unknown-7"] == 0


def test_a_pod_without_locus_annotations_passes_everywhere(mixed_fleet: Any) -> None:
    plain = {"metadata": {"name": "web-0"}}
    result = _post("/extender/filter", {"Pod": plain, "NodeNames": K8S_NODES})
    assert result["NodeNames"] == K8S_NODES
    scores = _post("/extender/prioritize", {"Pod": plain, "NodeNames": K8S_NODES})
    assert {r["Score"] for r in scores} == {0}


def test_a_bad_annotation_is_reported_in_the_error_field(mixed_fleet: Any) -> None:
    pod = {
        "metadata": {
            "annotations": {
                "locus.io/model": "llama-3.1-8b",
                "locus.io/site": "muc-edge",
                "locus.io/prompt-tokens": "lots",
            }
        }
    }
    result = _post("/extender/filter", {"Pod": pod, "NodeNames": K8S_NODES})
    assert result["Error"].startswith("bad token-count annotation")
