"""Inventory endpoints: read for viewers, write for operators, node actions for operators."""

from __future__ import annotations

from typing import Any

import yaml
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access.identity import identity_of
from console.access.permissions import OPERATORS, VIEWERS, inventory_access
from console.api.errors import ApplicationError
from console.api.parsers import SafeJSONParser, YamlTextParser
from console.inventory import filtersets
from console.inventory.api import serializers as s
from console.inventory.models import (
    Accelerator,
    Link,
    Node,
    Profile,
    ServedModel,
    Site,
    Slo,
    Source,
    WorkloadShare,
)
from console.inventory.selectors import InvalidInventory, inventory_topology
from console.inventory.services import (
    inventory_delete,
    inventory_write,
    node_change_state,
    topology_import,
)
from optimizer.errors import InputFileError
from optimizer.topology_files import parse_topology


class _InventoryViewSet(viewsets.ModelViewSet):
    """Every create, update and delete runs through the service layer's inventory_write, which
    rolls the write back if it leaves the inventory an invalid topology (400 with the
    problems), and deletes through inventory_delete, which refuses to delete what is still in
    use (409 with `referenced_by`)."""

    def perform_create(self, serializer: Any) -> None:
        with inventory_write():
            serializer.save()

    def perform_update(self, serializer: Any) -> None:
        with inventory_write():
            serializer.save()

    def perform_destroy(self, instance: Any) -> None:
        inventory_delete(instance)


class _NamedViewSet(_InventoryViewSet):
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    access = inventory_access()
    ordering_fields = ["name"]
    ordering = ["name"]


class SiteViewSet(_NamedViewSet):
    queryset = Site.objects.all()
    serializer_class = s.SiteSerializer
    filterset_class = filtersets.SiteFilterSet
    ordering_fields = ["name", "tier", "region"]


class LinkViewSet(_InventoryViewSet):
    queryset = Link.objects.select_related("site_a", "site_b")
    serializer_class = s.LinkSerializer
    filterset_class = filtersets.LinkFilterSet
    access = inventory_access()
    ordering_fields = ["rtt_ms", "bandwidth_gbps", "egress_usd_per_gb"]
    ordering = ["site_a__name", "site_b__name"]


class AcceleratorViewSet(_NamedViewSet):
    queryset = Accelerator.objects.all()
    serializer_class = s.AcceleratorSerializer
    ordering_fields = ["name", "memory_gib"]


class ServedModelViewSet(_NamedViewSet):
    queryset = ServedModel.objects.all()
    serializer_class = s.ServedModelSerializer
    ordering_fields = ["name", "memory_gib"]


class ProfileViewSet(_InventoryViewSet):
    queryset = Profile.objects.select_related("model", "accelerator")
    serializer_class = s.ProfileSerializer
    filterset_class = filtersets.ProfileFilterSet
    access = inventory_access()
    ordering_fields = ["prefill_tokens_per_s", "decode_step_ms", "max_batch"]
    ordering = ["model__name", "accelerator__name"]


STATE_CHANGES_SHOWN = 50


def _caller_name(request: Request) -> str:
    """The audit name of the caller (a username or `key:NAME`); every node action needs an
    authenticated caller, so there always is one."""
    identity = identity_of(request.user)
    if identity is None:  # pragma: no cover - RolePermission lets no anonymous caller in
        raise ApplicationError("Sign in or send an API key.", status_code=401)
    return identity.name


class NodeViewSet(_NamedViewSet):
    queryset = Node.objects.select_related("site", "accelerator").prefetch_related("served_models")
    serializer_class = s.NodeSerializer
    filterset_class = filtersets.NodeFilterSet
    ordering_fields = ["name", "usd_per_hour", "gpus", "state"]
    access = inventory_access(
        drain=OPERATORS,
        cordon=OPERATORS,
        uncordon=OPERATORS,
        mark_down=OPERATORS,
        state_changes=VIEWERS,
    )

    def _act(self, request: Request, verb: str) -> Response:
        body = s.NodeActionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        node = node_change_state(
            node=self.get_object(),
            action=verb,
            actor=_caller_name(request),
            reason=body.validated_data["reason"],
        )
        return Response(s.NodeSerializer(self.get_queryset().get(pk=node.pk)).data)

    @extend_schema(request=s.NodeActionSerializer, responses=s.NodeSerializer)
    @action(detail=True, methods=["post"])
    def drain(self, request: Request, name: str) -> Response:
        """Stop sending new requests; in-flight work finishes."""
        return self._act(request, "drain")

    @extend_schema(request=s.NodeActionSerializer, responses=s.NodeSerializer)
    @action(detail=True, methods=["post"])
    def cordon(self, request: Request, name: str) -> Response:
        """Keep the node out of new placements without draining it."""
        return self._act(request, "cordon")

    @extend_schema(request=s.NodeActionSerializer, responses=s.NodeSerializer)
    @action(detail=True, methods=["post"])
    def uncordon(self, request: Request, name: str) -> Response:
        """Return the node to service."""
        return self._act(request, "uncordon")

    @extend_schema(request=s.NodeActionSerializer, responses=s.NodeSerializer)
    @action(detail=True, methods=["post"], url_path="mark-down")
    def mark_down(self, request: Request, name: str) -> Response:
        """Declare the node down (failed); it receives nothing until uncordoned."""
        return self._act(request, "mark_down")

    @extend_schema(responses=s.NodeStateChangeSerializer(many=True))
    @action(
        detail=True,
        methods=["get"],
        url_path="state-changes",
        pagination_class=None,
        filter_backends=[],
    )
    def state_changes(self, request: Request, name: str) -> Response:
        """The node's last 50 state changes, newest first: who, when, from what, and why."""
        changes = self.get_object().state_changes.all()[:STATE_CHANGES_SHOWN]
        return Response(s.NodeStateChangeSerializer(changes, many=True).data)


class SloViewSet(_NamedViewSet):
    queryset = Slo.objects.all()
    serializer_class = s.SloSerializer


class SourceViewSet(_NamedViewSet):
    queryset = Source.objects.select_related("site", "slo")
    serializer_class = s.SourceSerializer
    filterset_class = filtersets.SourceFilterSet


class WorkloadShareViewSet(_InventoryViewSet):
    queryset = WorkloadShare.objects.select_related("model")
    serializer_class = s.WorkloadShareSerializer
    access = inventory_access()
    ordering = ["model__name"]


class TopologyView(APIView):
    """The whole inventory in the topology file format (docs/contracts.md §1)."""

    access = {"GET": VIEWERS, "HEAD": VIEWERS, "OPTIONS": VIEWERS, "PUT": OPERATORS}
    parser_classes = [SafeJSONParser, YamlTextParser]

    @extend_schema(responses={200: OpenApiResponse(description="The topology as JSON.")})
    def get(self, request: Request) -> Response:
        try:
            topology = inventory_topology()
        except InvalidInventory as exc:
            raise ApplicationError(
                "The inventory is not a valid topology; fix these entries first.",
                status_code=status.HTTP_409_CONFLICT,
                errors={"topology": exc.problems},
            ) from exc
        return Response(topology.to_dict())

    @extend_schema(
        request={"application/json": dict, "application/yaml": str},
        responses={200: OpenApiResponse(description="What the import changed.")},
    )
    def put(self, request: Request) -> Response:
        """Import a topology (JSON body, or YAML text with Content-Type application/yaml)."""
        body: Any = request.data
        if not isinstance(body, str | dict):
            raise ApplicationError(
                "The topology must be an object (JSON) or a YAML mapping.",
                errors={"topology": ["must be an object with version: 1"]},
            )
        text = body if isinstance(body, str) else yaml.safe_dump(dict(body))
        try:
            topology = parse_topology(text, "request body")
        except InputFileError as exc:
            raise ApplicationError(
                "The topology is invalid; nothing was imported.", errors={"topology": exc.problems}
            ) from exc
        prune = request.query_params.get("prune") in ("1", "true", "yes")
        try:
            summary = topology_import(topology=topology, prune=prune, source="request body")
        except InputFileError as exc:
            raise ApplicationError(
                "The topology is invalid; nothing was imported.", errors={"topology": exc.problems}
            ) from exc
        return Response(
            {
                "changed": summary.changed,
                "counts": {kind: dict(c) for kind, c in summary.counts.items()},
            },
            status=status.HTTP_200_OK,
        )
