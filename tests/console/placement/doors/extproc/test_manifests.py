"""The deployment files of docs/gateway/ validated against their schemas: the static Envoy
config as an `envoy.config.bootstrap.v3.Bootstrap` (xds-protos), the Kubernetes manifests
against the InferencePool CRD's OpenAPI schema and Kubernetes 1.31's JSON schemas
(docs/gateway/schemas/README.md)."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import jsonschema
import pytest
import yaml

# Imported for their side effect: the typed_config messages resolve by type URL.
from envoy.config.bootstrap.v3 import bootstrap_pb2
from envoy.extensions.filters.http.ext_proc.v3 import ext_proc_pb2  # noqa: F401
from envoy.extensions.filters.http.router.v3 import router_pb2  # noqa: F401
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # noqa: F401
    http_connection_manager_pb2,
)
from envoy.extensions.upstreams.http.v3 import http_protocol_options_pb2  # noqa: F401
from google.protobuf import json_format

from tests.conftest import REPO

GATEWAY = REPO / "docs" / "gateway"
SCHEMAS = GATEWAY / "schemas"
MANIFESTS = sorted((GATEWAY / "k8s").glob("*.yaml"))


def _envoy() -> dict[str, Any]:
    return dict(yaml.safe_load((GATEWAY / "envoy.yaml").read_text()))


def _bootstrap(config: dict[str, Any]) -> bootstrap_pb2.Bootstrap:
    return json_format.ParseDict(config, bootstrap_pb2.Bootstrap())


def test_the_envoy_config_is_a_valid_bootstrap_with_the_protocols_modes() -> None:
    bootstrap = _bootstrap(_envoy())
    manager = http_connection_manager_pb2.HttpConnectionManager()
    bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.Unpack(manager)
    ext_proc = ext_proc_pb2.ExternalProcessor()
    assert manager.http_filters[0].name == "envoy.filters.http.ext_proc"
    manager.http_filters[0].typed_config.Unpack(ext_proc)
    mode = ext_proc.processing_mode
    assert (mode.request_header_mode, mode.response_header_mode) == (mode.SEND, mode.SEND)
    assert mode.request_body_mode == mode.response_body_mode == mode.FULL_DUPLEX_STREAMED
    assert (mode.request_trailer_mode, mode.response_trailer_mode) == (mode.SEND, mode.SEND)
    assert "envoy.lb.subset_hint" in ext_proc.metadata_options.forwarding_namespaces.untyped
    assert list(ext_proc.metadata_options.receiving_namespaces.untyped) == ["envoy.lb"]
    pool = {c.name: c for c in bootstrap.static_resources.clusters}["inference_pool"]
    assert pool.type == pool.ORIGINAL_DST
    assert pool.original_dst_lb_config.use_http_header
    assert pool.original_dst_lb_config.http_header_name == "x-gateway-destination-endpoint"
    picker = {c.name: c for c in bootstrap.static_resources.clusters}["locus_picker"]
    port = picker.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address
    assert port.port_value == 9002


def test_a_misspelt_envoy_field_is_refused() -> None:
    config = _envoy()
    http_filter = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    ext_proc = http_filter["typed_config"]["http_filters"][0]["typed_config"]
    ext_proc["processing_mode"]["request_body_mode"] = "FULL_DUPLEX_STREAM"
    with pytest.raises(json_format.ParseError, match="FULL_DUPLEX_STREAM"):
        _bootstrap(config)


def _strict(schema: Any) -> Any:
    """A CRD's structural schema as a JSON schema that refuses unknown fields (as the API
    server's strict field validation does), leaving free-form objects (metadata) open."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
        if out.get("type") == "object" and "properties" in out:
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    crd = yaml.safe_load((SCHEMAS / "inferencepools.inference.networking.k8s.io.yaml").read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    pool = _strict(version["schema"]["openAPIV3Schema"])
    pool["properties"]["apiVersion"]["enum"] = ["inference.networking.k8s.io/v1"]
    pool["properties"]["kind"]["enum"] = ["InferencePool"]
    return {
        ("inference.networking.k8s.io/v1", "InferencePool"): pool,
        ("apps/v1", "Deployment"): json.loads((SCHEMAS / "deployment-apps-v1.json").read_text()),
        ("v1", "Service"): json.loads((SCHEMAS / "service-v1.json").read_text()),
    }


def _cel_rules(doc: dict[str, Any]) -> list[str]:
    """The CRD's two `x-kubernetes-validations` rules, which JSON schema cannot express."""
    if doc["kind"] != "InferencePool":
        return []
    problems = []
    ref = doc["spec"]["endpointPickerRef"]
    if ref.get("kind", "Service") == "Service" and "port" not in ref:
        problems.append("port is required when kind is 'Service' or unspecified")
    numbers = [p["number"] for p in doc["spec"]["targetPorts"]]
    if len(numbers) != len(set(numbers)):
        problems.append("port number must be unique")
    return problems


def _validate(doc: dict[str, Any]) -> None:
    schema = _schemas()[(doc["apiVersion"], doc["kind"])]
    jsonschema.Draft7Validator(schema).validate(doc)
    problems = _cel_rules(doc)
    if problems:
        raise jsonschema.ValidationError("; ".join(problems))


def _documents() -> list[dict[str, Any]]:
    return [d for path in MANIFESTS for d in yaml.safe_load_all(path.read_text()) if d]


def test_every_kubernetes_manifest_validates_against_its_schema() -> None:
    kinds = []
    for doc in _documents():
        _validate(doc)
        kinds.append(doc["kind"])
    assert sorted(kinds) == ["Deployment", "InferencePool", "Service"]


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("InferencePool", ["spec", "endpointPickerRef", "failureMode"], "FailSoft"),
        ("InferencePool", ["spec", "endpointPickerRef", "portNumber"], 9002),  # pre-v1 field
        ("InferencePool", ["spec", "targetPorts"], [{"number": 8000}, {"number": 8000}]),
        (
            "Deployment",
            ["spec", "template", "spec", "containers", 0, "readinessProbe", "grpc", "port"],
            "9003",
        ),
        ("Service", ["spec", "ports", 0, "protocoll"], "TCP"),  # unknown field
    ],
)
def test_a_broken_manifest_is_refused(kind: str, path: list[Any], value: Any) -> None:
    doc = copy.deepcopy(next(d for d in _documents() if d["kind"] == kind))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)


def test_the_pool_points_at_the_pickers_service_and_ports() -> None:
    docs = {d["kind"]: d for d in _documents()}
    ref = docs["InferencePool"]["spec"]["endpointPickerRef"]
    service = docs["Service"]
    assert ref["name"] == service["metadata"]["name"] == docs["Deployment"]["metadata"]["name"]
    assert ref["port"]["number"] == service["spec"]["ports"][0]["port"] == 9002
    container = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["picker"]
    assert container["readinessProbe"]["grpc"] == {"port": 9003, "service": "readiness"}
    assert container["livenessProbe"]["grpc"] == {"port": 9003, "service": "liveness"}
    assert {p["containerPort"] for p in container["ports"]} == {9002, 9003, 9090}


def test_the_shipped_schemas_are_the_documented_files() -> None:
    readme = (SCHEMAS / "README.md").read_text()
    for path in SCHEMAS.iterdir():
        if path.name != "README.md":
            assert f"`{path.name}`" in readme or path.name in readme, path
