"""The REST door: `POST /api/v1/placements`, `:batch` and `/{decision_id}/outcome`
(docs/contracts.md §4). The views only translate; `handlers` parses and answers, the runtime
decides and records. The ASGI fast path (`fastpath.py`) serves the first two for warm service
keys with the same handlers."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access.identity import identity_of
from console.access.permissions import SERVICE_CALLERS
from console.api.errors import ApplicationError
from console.placement.doors import answers as s
from console.placement.doors import handlers
from console.placement.doors.bodies import (
    OutcomeBody,
    PlacementBatchBody,
    PlacementRequestBody,
    parse,
)
from console.placement.engine.outcomes import DecisionNotFound, OutcomeAlreadyRecorded
from console.placement.engine.runtime import runtime


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
