"""The placement app's read API: recorded decisions, breakers, the overview and the fleet's
series. Decisions are asked through the doors (`console/placement/doors/`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access.permissions import VIEWERS
from console.placement.api.serializers.decisions import (
    DecisionRecordSerializer,
    DecisionSearchSerializer,
)
from console.placement.api.serializers.nodes import NodeWhySerializer
from console.placement.api.serializers.overview import OverviewSerializer
from console.placement.api.serializers.series import (
    FleetSeriesQuerySerializer,
    FleetSeriesSerializer,
)
from console.placement.breach_flags import breaches_around
from console.placement.engine.runtime import runtime
from console.placement.models import BreakerEvent, DecisionRecord
from console.placement.node_why import node_why
from console.placement.selectors import decision_overview, decision_search
from console.placement.series import fleet_series


class DecisionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Recorded decisions (written in batches, so the newest may take a moment to appear).

    The list is a search over every stored record (`selectors.decision_search`), paginated
    with `?limit=&offset=`; a decision's own page is GET /api/v1/decisions/{id}."""

    queryset = DecisionRecord.objects.all()
    serializer_class = DecisionRecordSerializer
    access = {"list": VIEWERS, "retrieve": VIEWERS, "OPTIONS": VIEWERS}
    # The search validates its own parameters (DecisionSearchSerializer).
    filter_backends: list[type] = []

    @extend_schema(parameters=[DecisionSearchSerializer])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Search the decision records by id, time range (`from` inclusive, `to` exclusive),
        node, model, SLO, source, policy (NAME or NAME@VERSION), arm and outcome; newest
        first (`order=oldest` to turn it round). An unknown or malformed parameter is a 400
        naming it."""
        query = DecisionSearchSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        records = decision_search(query.validated_data)
        page = self.paginate_queryset(records) or []
        breaches = breaches_around([(r.node, r.created_at) for r in page])
        context = {**self.get_serializer_context(), "breaches": breaches}
        serializer = self.get_serializer(page, many=True, context=context)
        return self.get_paginated_response(serializer.data)


class NodeWhyView(APIView):
    access = {"GET": VIEWERS, "HEAD": VIEWERS, "OPTIONS": VIEWERS}

    @extend_schema(responses={200: NodeWhySerializer})
    def get(self, request: Request, name: str) -> Response:
        """Why the node looks as it does: its breaches, breaker, telemetry age, state changes,
        recent decisions and their outcomes, and `reasons` in plain words, worst first."""
        answer = node_why(name=name, now=timezone.now())
        if answer is None:
            raise NotFound(f"No node named {name!r}.")
        return Response(NodeWhySerializer(answer).data)


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
        responses={200: OverviewSerializer},
    )
    def get(self, request: Request) -> Response:
        """Decisions per second, and per SLO its attainment over a recent window judged as its
        breaches are: objective, burn rates under each rule now, worst open breach."""
        try:
            window = float(request.query_params.get("window", 900))
        except ValueError as exc:
            raise ValidationError({"window": ["A number of seconds."]}) from exc
        if not 10 <= window <= 7 * 86400:
            raise ValidationError({"window": ["Between 10 seconds and 7 days."]})
        return Response(OverviewSerializer(decision_overview(window_s=window)).data)


class FleetSeriesView(APIView):
    access = {"GET": VIEWERS, "HEAD": VIEWERS, "OPTIONS": VIEWERS}

    @extend_schema(
        parameters=[
            OpenApiParameter("from", str, description="RFC 3339; default an hour before `to`"),
            OpenApiParameter("to", str, description="RFC 3339; default now"),
            OpenApiParameter("step", int, description="Seconds per bucket (default: ~240 points)"),
        ],
        responses={200: FleetSeriesSerializer},
    )
    def get(self, request: Request) -> Response:
        """Fleet-wide series for charts: decisions/s, decision latency, fallbacks, breaker
        trips, prefix hit rate, SLO attainment and burn rate, and rollout marks (7 days at
        most, 1000 points at most)."""
        query = FleetSeriesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(fleet_series(**query.validated_data))
