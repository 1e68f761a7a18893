"""Decision endpoints. Views only translate: the engine (`engine.runtime`) decides."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access.identity import identity_of
from console.access.permissions import SERVICE_CALLERS, VIEWERS
from console.api.errors import ApplicationError
from console.placement.api import handlers
from console.placement.api import serializers as s
from console.placement.api.bodies import (
    OutcomeBody,
    PlacementBatchBody,
    PlacementRequestBody,
    parse,
)
from console.placement.engine.outcomes import DecisionNotFound, OutcomeAlreadyRecorded
from console.placement.engine.runtime import runtime
from console.placement.models import BreakerEvent, DecisionRecord
from console.placement.selectors import decision_overview
from console.placement.series import fleet_series


def _caller(request: Request) -> str:
    """The identity's name (`key:NAME` or a username) decisions and outcomes are tied to."""
    identity = identity_of(request.user)
    return identity.name if identity is not None else ""


class PlacementView(APIView):
    access = {"POST": SERVICE_CALLERS, "OPTIONS": SERVICE_CALLERS}

    @extend_schema(
        request=PlacementRequestBody,
        responses={200: s.PlacementAnswerSerializer, 503: s.UnplaceableSerializer},
    )
    def post(self, request: Request) -> Response:
        """Decide where one request should run: the node, its site and ordered fallbacks."""
        code, payload = handlers.decide_one(request.data, caller=_caller(request))
        return Response(payload, status=code)


class PlacementBatchView(APIView):
    access = {"POST": SERVICE_CALLERS, "OPTIONS": SERVICE_CALLERS}

    @extend_schema(request=PlacementBatchBody, responses={200: s.PlacementBatchAnswerSerializer})
    def post(self, request: Request) -> Response:
        """Decide many requests in order; one malformed request rejects the whole batch."""
        code, payload = handlers.decide_batch(request.data, caller=_caller(request))
        return Response(payload, status=code)


class OutcomeView(APIView):
    access = {"POST": SERVICE_CALLERS, "OPTIONS": SERVICE_CALLERS}

    @extend_schema(
        request=OutcomeBody,
        responses={
            200: s.OutcomeAnswerSerializer,
            404: OpenApiResponse(description="Unknown decision."),
            409: OpenApiResponse(description="This decision already has its outcome."),
        },
    )
    def post(self, request: Request, decision_id: str) -> Response:
        """Report what happened to a placed request: feeds breakers and SLO windows."""
        body = parse(OutcomeBody, request.data)
        try:
            result = runtime().record_outcome(
                decision_id, caller=_caller(request), **body.model_dump()
            )
        except DecisionNotFound as exc:
            raise NotFound(f"No decision {decision_id!r}.") from exc
        except OutcomeAlreadyRecorded as exc:
            raise ApplicationError(
                f"Decision {decision_id!r} already has its outcome; the first one counts.",
                status_code=409,
            ) from exc
        return Response(result)


class DecisionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Recorded decisions (written in batches, so the newest may take a moment to appear)."""

    queryset = DecisionRecord.objects.all()
    serializer_class = s.DecisionRecordSerializer
    access = {"list": VIEWERS, "retrieve": VIEWERS, "OPTIONS": VIEWERS}
    filterset_fields = [
        "node",
        "model",
        "slo",
        "source",
        "policy_name",
        "policy_version",
        "arm",
        "ok",
        "slo_met",
    ]
    ordering_fields = ["created_at", "latency_us", "ttft_ms", "e2e_ms"]
    ordering = ["-created_at"]


class BreakerView(APIView):
    access = {"GET": VIEWERS, "HEAD": VIEWERS, "OPTIONS": VIEWERS}

    @extend_schema(responses={200: OpenApiResponse(description="Breaker states and history.")})
    def get(self, request: Request) -> Response:
        """This server process's breaker states, and the last state changes of all."""
        events = BreakerEvent.objects.all()[:100]
        return Response(
            {
                "states": runtime().breakers.snapshot(),
                "config": asdict(runtime().breakers.config),
                "recent": [
                    {
                        "node": e.node,
                        "from_state": e.from_state,
                        "to_state": e.to_state,
                        "reason": e.reason,
                        "at": e.at.isoformat(),
                    }
                    for e in events
                ],
            }
        )


class OverviewView(APIView):
    access = {"GET": VIEWERS, "HEAD": VIEWERS, "OPTIONS": VIEWERS}

    @extend_schema(
        parameters=[OpenApiParameter("window", float, description="Seconds (default 900).")],
        responses={200: OpenApiResponse(description="Decision rate and SLO attainment.")},
    )
    def get(self, request: Request) -> Response:
        """Decisions per second and SLO attainment per SLO over a recent window."""
        try:
            window = float(request.query_params.get("window", 900))
        except ValueError as exc:
            raise ValidationError({"window": ["A number of seconds."]}) from exc
        if not 10 <= window <= 7 * 86400:
            raise ValidationError({"window": ["Between 10 seconds and 7 days."]})
        return Response(decision_overview(window_s=window))


class FleetSeriesView(APIView):
    access = {"GET": VIEWERS, "HEAD": VIEWERS, "OPTIONS": VIEWERS}

    @extend_schema(
        parameters=[
            OpenApiParameter("from", str, description="RFC 3339; default an hour before `to`"),
            OpenApiParameter("to", str, description="RFC 3339; default now"),
            OpenApiParameter("step", int, description="Seconds per bucket (default: ~240 points)"),
        ],
        responses={200: s.FleetSeriesSerializer},
    )
    def get(self, request: Request) -> Response:
        """Fleet-wide series for charts: decisions/s, decision latency, fallbacks, breaker
        trips, prefix hit rate, SLO attainment and burn rate, and rollout marks (7 days at
        most, 1000 points at most)."""
        query = s.FleetSeriesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(fleet_series(**query.validated_data))
