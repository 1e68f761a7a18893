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
    assert result["Error"].startswith("bad annotation locus.io/prompt-tokens: ")


# -- malformed input: never a 500 ----------------------------------------------------------


def _post_raw(path: str, body: Any) -> Any:
    return Client().post(path, json.dumps(body), content_type="application/json")


def _annotated(**notes: str) -> dict[str, Any]:
    base = {"locus.io/model": "llama-3.1-8b", "locus.io/source": "munich-app"}
    return {"metadata": {"annotations": {**base, **notes}}}


MALFORMED_ARGS = [
    pytest.param({"Pod": POD, "NodeNames": 5}, "NodeNames", id="node-names-int"),
    pytest.param({"Pod": POD, "NodeNames": "muc-l4-1"}, "NodeNames", id="node-names-string"),
    pytest.param({"Pod": POD, "NodeNames": ["muc-l4-1", 7]}, "NodeNames", id="node-name-int"),
    pytest.param({"Pod": POD, "Nodes": [{"metadata": {"name": "a"}}]}, "Nodes", id="nodes-list"),
    pytest.param({"Pod": POD, "Nodes": {"items": ["a"]}}, "Nodes", id="node-item-string"),
    pytest.param({"Pod": POD, "Nodes": {"items": {"a": 1}}}, "Nodes", id="node-items-object"),
    pytest.param({"Pod": "x", "NodeNames": K8S_NODES}, "Pod", id="pod-string"),
    pytest.param({"NodeNames": K8S_NODES}, "Pod", id="no-pod"),
    pytest.param({"Pod": {"metadata": "x"}, "NodeNames": K8S_NODES}, "Pod", id="metadata-string"),
    pytest.param(
        {"Pod": {"metadata": {"annotations": ["a"]}}, "NodeNames": K8S_NODES},
        "Pod",
        id="annotations-list",
    ),
    pytest.param({"Pod": POD}, "non_field_errors", id="no-nodes"),
    pytest.param([1, 2], "non_field_errors", id="body-list"),
]


@pytest.mark.parametrize(("body", "field"), MALFORMED_ARGS)
def test_malformed_args_fail_the_filter_in_its_error_field(
    mixed_fleet: Any, body: Any, field: str
) -> None:
    response = _post_raw("/extender/filter", body)
    assert response.status_code == 200, response.content
    result = response.json()
    assert ("ExtenderArgs" if field == "non_field_errors" else field) in result["Error"]
    assert result["NodeNames"] is None and result["Nodes"] is None
    assert result["FailedNodes"] == result["FailedAndUnresolvableNodes"] == {}


@pytest.mark.parametrize(("body", "field"), MALFORMED_ARGS)
def test_malformed_args_answer_prioritize_with_400(mixed_fleet: Any, body: Any, field: str) -> None:
    response = _post_raw("/extender/prioritize", body)
    assert response.status_code == 400, response.content
    result = response.json()
    assert isinstance(result["message"], str) and result["message"]
    assert field in result["errors"]


def test_node_names_as_a_string_are_not_read_one_letter_at_a_time(mixed_fleet: Any) -> None:
    body = {"Pod": POD, "NodeNames": "muc-l4-1"}
    assert _post_raw("/extender/filter", body).json()["Error"] == (
        "NodeNames: must be a list of node names"
    )
    assert _post_raw("/extender/prioritize", body).json() == {
        "message": "NodeNames: must be a list of node names",
        "errors": {"NodeNames": ["must be a list of node names"]},
    }


def test_a_node_list_item_without_a_name_is_named_by_its_path(mixed_fleet: Any) -> None:
    body = {"Pod": POD, "Nodes": {"items": [{"metadata": {"name": "muc-l4-1"}}, "a"]}}
    response = _post_raw("/extender/prioritize", body)
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "Nodes": {"items": {"1": {"metadata": {"name": ["every Node needs a name"]}}}}
    }


def test_a_node_list_with_null_items_is_empty(mixed_fleet: Any) -> None:
    body = {"Pod": POD, "Nodes": {"metadata": {}, "items": None}}
    result = _post("/extender/filter", body)
    assert result["Error"] == ""
    assert result["Nodes"]["items"] == []
    assert _post("/extender/prioritize", body) == []


def test_a_body_that_is_not_json_is_refused(mixed_fleet: Any) -> None:
    client = Client()
    response = client.post("/extender/filter", "{", content_type="application/json")
    assert response.status_code == 200
    assert response.json()["Error"].startswith("body is not JSON")
    response = client.post("/extender/prioritize", "{", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["message"].startswith("body is not JSON")


# -- annotations are validated as the placements API validates its body -----------------------

BAD_ANNOTATIONS = [
    pytest.param("locus.io/prompt-tokens", "-100", "greater than or equal to 0", id="prompt-neg"),
    pytest.param("locus.io/prompt-tokens", "lots", "valid integer", id="prompt-text"),
    pytest.param("locus.io/prompt-tokens", "1.5", "valid integer", id="prompt-fraction"),
    pytest.param("locus.io/prompt-tokens", "99999999999", "less than or equal", id="prompt-huge"),
    pytest.param("locus.io/max-output-tokens", "0", "greater than or equal to 1", id="output-0"),
    pytest.param("locus.io/max-output-tokens", "", "valid integer", id="output-empty"),
]


@pytest.mark.parametrize(("name", "value", "detail"), BAD_ANNOTATIONS)
def test_a_bad_token_annotation_fails_the_filter(
    mixed_fleet: Any, name: str, value: str, detail: str
) -> None:
    result = _post("/extender/filter", {"Pod": _annotated(**{name: value}), "NodeNames": K8S_NODES})
    assert result["Error"].startswith(f"bad annotation {name}: ")
    assert detail in result["Error"]
    assert result["NodeNames"] is None


@pytest.mark.parametrize(("name", "value", "detail"), BAD_ANNOTATIONS)
def test_a_bad_token_annotation_answers_prioritize_with_400(
    mixed_fleet: Any, name: str, value: str, detail: str
) -> None:
    body = {"Pod": _annotated(**{name: value}), "NodeNames": K8S_NODES}
    response = _post_raw("/extender/prioritize", body)
    assert response.status_code == 400
    result = response.json()
    assert result["message"].startswith(f"bad annotation {name}: ")
    (message,) = result["errors"]["Pod"]["metadata"]["annotations"][name]
    assert detail in message


def test_every_bad_annotation_is_reported(mixed_fleet: Any) -> None:
    pod = _annotated(**{"locus.io/prompt-tokens": "-1", "locus.io/max-output-tokens": "0"})
    response = _post_raw("/extender/prioritize", {"Pod": pod, "NodeNames": K8S_NODES})
    assert response.status_code == 400
    notes = response.json()["errors"]["Pod"]["metadata"]["annotations"]
    assert set(notes) == {"locus.io/prompt-tokens", "locus.io/max-output-tokens"}


def test_the_smallest_valid_token_annotations_pass(mixed_fleet: Any) -> None:
    pod = _annotated(**{"locus.io/prompt-tokens": "0", "locus.io/max-output-tokens": "1"})
    result = _post("/extender/filter", {"Pod": pod, "NodeNames": K8S_NODES})
    assert result["Error"] == ""
    assert sorted(result["NodeNames"]) == ["fra-h100-1", "muc-l4-1"]


def test_a_non_string_model_annotation_is_refused(mixed_fleet: Any) -> None:
    pod = {"metadata": {"annotations": {"locus.io/model": ["x"], "locus.io/site": "muc-edge"}}}
    result = _post("/extender/filter", {"Pod": pod, "NodeNames": K8S_NODES})
    assert result["Error"] == "bad annotation locus.io/model: Input should be a valid string"


def test_an_unknown_model_is_reported_with_its_annotation(mixed_fleet: Any) -> None:
    pod = _annotated(**{"locus.io/model": "gpt-9"})
    result = _post("/extender/filter", {"Pod": pod, "NodeNames": K8S_NODES})
    assert result["Error"] == "bad annotation locus.io/model: Unknown model 'gpt-9'."
    response = _post_raw("/extender/prioritize", {"Pod": pod, "NodeNames": K8S_NODES})
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "Pod": {"metadata": {"annotations": {"locus.io/model": ["Unknown model 'gpt-9'."]}}}
    }


def test_a_pod_without_source_or_site_is_refused(mixed_fleet: Any) -> None:
    pod = {"metadata": {"annotations": {"locus.io/model": "llama-3.1-8b"}}}
    result = _post("/extender/filter", {"Pod": pod, "NodeNames": K8S_NODES})
    assert "needs locus.io/source or locus.io/site" in result["Error"]


# -- stale telemetry: the engine's rule over the nodes kube-scheduler offers ----------------------


def test_stale_nodes_fail_while_a_fresh_offered_node_is_left(
    mixed_fleet: Any, set_loads: Any
) -> None:
    set_loads(fra_h100_1=(0, 0, 0.0, 3600.0), muc_l4_1=(0, 0, 0.0, 0.0))
    result = _post("/extender/filter", {"Pod": POD, "NodeNames": K8S_NODES})
    assert result["NodeNames"] == ["muc-l4-1"]
    assert result["FailedNodes"] == {"fra-h100-1": "stale_telemetry"}


def test_stale_nodes_pass_when_no_fresh_offered_node_is_left(
    mixed_fleet: Any, set_loads: Any
) -> None:
    set_loads(fra_h100_1=(0, 0, 0.0, 3600.0), muc_l4_1=(0, 0, 0.0, 3600.0))
    result = _post("/extender/filter", {"Pod": POD, "NodeNames": K8S_NODES})
    assert sorted(result["NodeNames"]) == ["fra-h100-1", "muc-l4-1"]
    assert result["FailedNodes"] == {}
    scores = {
        r["Host"]: r["Score"]
        for r in _post("/extender/prioritize", {"Pod": POD, "NodeNames": K8S_NODES})
    }
    assert max(scores["fra-h100-1"], scores["muc-l4-1"]) == 10


def test_a_nul_character_anywhere_is_refused_naming_its_path(mixed_fleet: Any) -> None:
    pod = _annotated(**{"locus.io/session": "a\x00b"})
    body = {"Pod": pod, "NodeNames": K8S_NODES}
    result = _post_raw("/extender/filter", body).json()
    assert "NUL" in result["Error"] and result["NodeNames"] is None
    response = _post_raw("/extender/prioritize", {"Pod": POD, "NodeNames": ["muc-l4-1", "a\x00"]})
    assert response.status_code == 400
    assert "NUL" in response.json()["errors"]["NodeNames"]["1"][0]


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_with_a_token_set_the_extender_answers_only_callers_that_send_it(
    mixed_fleet: Any, settings: Any, client_for: Any, verb: str
) -> None:
    settings.LOCUS_EXTENDER_TOKEN = "s3cret-token"
    body = json.dumps({"Pod": POD, "NodeNames": K8S_NODES})
    path = f"/extender/{verb}"
    for header in (None, "Bearer wrong", "s3cret-token", "Basic s3cret-token"):
        extra = {"HTTP_AUTHORIZATION": header} if header else {}
        refused = Client().post(path, body, content_type="application/json", **extra)
        assert refused.status_code == 401, header
    # Not even a service key stands in for the token: it is the extender's one credential.
    service = client_for("service")
    assert service.post(path, body, content_type="application/json").status_code == 401
    ok = Client().post(
        path, body, content_type="application/json", HTTP_AUTHORIZATION="Bearer s3cret-token"
    )
    assert ok.status_code == 200, ok.content
