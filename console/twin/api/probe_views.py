"""The exploration probes' API: viewers read, admins propose, approve, start and abort."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from console.access.permissions import ADMINS, VIEWERS
from console.placement.engine.runtime import runtime
from console.twin import probe_services as services
from console.twin.api import probe_serializers as s
from console.twin.api.views import _caller
from console.twin.models import CalibrationRun
from console.twin.probe_selectors import probes


class ExplorationProbeViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Exploration probes (docs/twin.md): a bounded share of decisions sent to nodes the
    twin has too few observations of, under a canary's rules."""

    queryset = probes()
    serializer_class = s.ExplorationProbeSerializer
    access = {
        "list": VIEWERS,
        "retrieve": VIEWERS,
        "OPTIONS": VIEWERS,
        "create": ADMINS,
        "approve": ADMINS,
        "start": ADMINS,
        "abort": ADMINS,
    }

    @extend_schema(request=s.ProbeProposalSerializer, responses={201: s.ExplorationProbeSerializer})
    def create(self, request: Request) -> Response:
        """Propose a probe; it sends nothing until another person approves it and an admin
        starts it."""
        body = s.ProbeProposalSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        if "min_observations" not in data:
            run_id = data.get("calibration_run")
            run = None if run_id is None else CalibrationRun.objects.filter(pk=run_id).first()
            data["min_observations"] = (
                run.min_samples if run is not None else settings.LOCUS_CALIBRATION_MIN_SAMPLES
            )
        probe = services.probe_create(actor=_caller(request), **data)
        return Response(s.ExplorationProbeSerializer(probe).data, status=status.HTTP_201_CREATED)

    def _step(self, request: Request, verb: str) -> Response:
        body = s.ProbeStepSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        probe = services.probe_step(
            probe=self.get_object(), action=verb, actor=_caller(request), **body.validated_data
        )
        runtime().refresh()  # this process sends (or stops sending) its share at once
        return Response(s.ExplorationProbeSerializer(probe).data)

    @extend_schema(request=s.ProbeStepSerializer, responses=s.ExplorationProbeSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        """Approve a proposed probe (a person other than its proposer)."""
        return self._step(request, "approve")

    @extend_schema(request=s.ProbeStepSerializer, responses=s.ExplorationProbeSerializer)
    @action(detail=True, methods=["post"])
    def start(self, request: Request, pk: str) -> Response:
        """Start an approved probe: from now its share of decisions goes to its targets."""
        return self._step(request, "start")

    @extend_schema(request=s.ProbeStepSerializer, responses=s.ExplorationProbeSerializer)
    @action(detail=True, methods=["post"])
    def abort(self, request: Request, pk: str) -> Response:
        """Abort a probe at any time before it ends; decisions return to the policy's."""
        return self._step(request, "abort")
