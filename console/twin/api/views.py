"""The twin API: recorded traffic as observations, calibration runs and their proposals."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from itertools import islice

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access.identity import Identity, identity_of
from console.access.permissions import OPERATORS, VIEWERS
from console.api.errors import ApplicationError
from console.twin import services
from console.twin.api import serializers as s
from console.twin.filtersets import CalibrationRunFilterSet
from console.twin.selectors import calibration_runs, observation_records
from optimizer.observations import observation_line


def _caller(request: Request) -> Identity:
    identity = identity_of(request.user)
    if identity is None:  # pragma: no cover - RolePermission lets no anonymous caller in
        raise ApplicationError("Sign in or send an API key.", status_code=401)
    return identity


# Lines per chunk sent: one write per few hundred kB instead of one per line.
LINES_PER_CHUNK = 1000


def _chunks(lines: Iterator[str]) -> Iterator[str]:
    while chunk := list(islice(lines, LINES_PER_CHUNK)):
        yield "".join(chunk)


async def _async_chunks(lines: Iterator[str]) -> AsyncIterator[str]:
    """The chunks for an ASGI server. Django serves a synchronous iterator under ASGI by first
    reading it whole into a list (django/http/response.py, StreamingHttpResponse.__aiter__),
    which would hold a million observations in memory; this pulls one chunk at a time on the
    thread that owns the database connection and its server-side cursor."""
    take = sync_to_async(lambda: "".join(islice(lines, LINES_PER_CHUNK)), thread_sensitive=True)
    while chunk := await take():
        yield chunk


class ObservationsView(APIView):
    """Recorded decisions and their outcomes as observations (JSONL, docs/twin.md)."""

    access = {"GET": VIEWERS, "HEAD": VIEWERS, "OPTIONS": VIEWERS}

    @extend_schema(
        parameters=[
            OpenApiParameter("since", OpenApiTypes.DATETIME, required=True),
            OpenApiParameter("until", OpenApiTypes.DATETIME, required=True),
        ],
        responses={
            (200, "application/jsonl"): OpenApiResponse(
                OpenApiTypes.STR, description="One observation per line, oldest first."
            )
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        """Stream the decisions made in [since, until) (RFC 3339) with their outcomes, one
        JSON object a line, in constant memory."""
        window = s.WindowSerializer(data=request.query_params)
        window.is_valid(raise_exception=True)
        lines = (
            observation_line(record)
            for record in observation_records(
                since=window.validated_data["since"], until=window.validated_data["until"]
            )
        )
        asynchronous = isinstance(request._request, ASGIRequest)
        response = StreamingHttpResponse(
            _async_chunks(lines) if asynchronous else _chunks(lines),
            content_type="application/jsonl",
        )
        response["Content-Disposition"] = 'attachment; filename="observations.jsonl"'
        return response


class CalibrationRunViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Calibration runs over recorded traffic: viewers read, operators run and decide."""

    queryset = calibration_runs()
    serializer_class = s.CalibrationRunSerializer
    access = {
        "list": VIEWERS,
        "retrieve": VIEWERS,
        "OPTIONS": VIEWERS,
        "create": OPERATORS,
        "apply": OPERATORS,
        "discard": OPERATORS,
    }
    filterset_class = CalibrationRunFilterSet

    @extend_schema(
        request=s.CalibrationRequestSerializer, responses={202: s.CalibrationRunSerializer}
    )
    def create(self, request: Request) -> Response:
        """Queue a calibration of the inventory's fleet against the last `hours` of traffic."""
        body = s.CalibrationRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        until = timezone.now()
        run = services.calibration_start(
            since=until - timedelta(hours=body.validated_data["hours"]),
            until=until,
            min_samples=body.validated_data.get(
                "min_samples", settings.LOCUS_CALIBRATION_MIN_SAMPLES
            ),
            requested_by=_caller(request),
        )
        run.refresh_from_db()
        return Response(s.CalibrationRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=s.ProposalApplyRequestSerializer, responses=s.ProposalDecisionSerializer)
    @action(detail=True, methods=["post"])
    def apply(self, request: Request, pk: str) -> Response:
        """Set the inventory's profiles to the proposal's fitted values (audited). A proposal
        whose verdict is 'no_improvement' takes `override: true` (409 without it)."""
        body = s.ProposalApplyRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        decision = services.proposal_apply(
            run=self.get_object(), actor=_caller(request), **body.validated_data
        )
        return Response(s.ProposalDecisionSerializer(decision).data)

    @extend_schema(
        request=s.ProposalDecisionRequestSerializer, responses=s.ProposalDecisionSerializer
    )
    @action(detail=True, methods=["post"])
    def discard(self, request: Request, pk: str) -> Response:
        """Close the proposal without changing the inventory (audited)."""
        body = s.ProposalDecisionRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        decision = services.proposal_discard(
            run=self.get_object(), actor=_caller(request), **body.validated_data
        )
        return Response(s.ProposalDecisionSerializer(decision).data)
