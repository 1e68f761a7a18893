"""Telemetry endpoints: ingest for services, series, fresh state and breaches for viewers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access.permissions import SERVICE_CALLERS, VIEWERS
from console.api.errors import ApplicationError
from console.inventory.selectors import node_exists
from telemetry import conf
from telemetry.api import serializers as s
from telemetry.models import BatchKind
from telemetry.node_latency import node_latency
from telemetry.selectors import (
    breach_list,
    latest_fleet_state,
    node_metric_names,
    node_series,
)
from telemetry.services import batch_accept
from telemetry.slo_status import slo_burn_rates

INGEST = {"POST": SERVICE_CALLERS, "OPTIONS": SERVICE_CALLERS}
READ = {"GET": VIEWERS, "HEAD": VIEWERS, "OPTIONS": VIEWERS}


class RawBodyParser(BaseParser):
    """Hands the body over as bytes (any content type), up to LOCUS_TELEMETRY_MAX_BODY_BYTES;
    each ingest view parses its own format."""

    media_type = "*/*"

    # DRF's stubs say parse() returns a mapping; any value becomes request.data.
    def parse(  # type: ignore[override]
        self, stream: Any, media_type: str | None = None, parser_context: Any = None
    ) -> bytes:
        limit = conf.max_body_bytes()
        body: bytes = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise ParseError(f"The body is larger than {limit} bytes; send smaller batches.")
        return body


class _IngestView(APIView):
    access = INGEST
    parser_classes = [RawBodyParser]
    kind: str = ""

    def _accept(self, request: Request, node: str = "") -> Response:
        body = request.data if isinstance(request.data, bytes) else b""
        accepted = batch_accept(kind=self.kind, body=body, node=node)
        return Response(
            {
                "batch_id": accepted.batch_id,
                "samples": accepted.samples,
                "values": accepted.values,
                "skipped_series": accepted.skipped_series,
                "unknown_nodes": accepted.unknown_nodes,
            },
            status=status.HTTP_202_ACCEPTED,
        )


class SamplesView(_IngestView):
    """JSON samples: {"samples": [{"node", "ts", "metrics": {name: number}}]}."""

    kind = BatchKind.JSON

    @extend_schema(request=s.SamplesSerializer, responses={202: s.AcceptedSerializer})
    def post(self, request: Request) -> Response:
        return self._accept(request)


class PrometheusView(_IngestView):
    """A Prometheus text exposition body (what an exporter's /metrics returns)."""

    kind = BatchKind.PROMETHEUS

    @extend_schema(
        request={"text/plain": str},
        parameters=[OpenApiParameter("node", str, required=True)],
        responses={202: s.AcceptedSerializer},
    )
    def post(self, request: Request) -> Response:
        return self._accept(request, node=request.query_params.get("node", ""))


class RemoteWriteView(_IngestView):
    """Prometheus remote-write 1.0 (snappy-compressed protobuf WriteRequest)."""

    kind = BatchKind.REMOTE_WRITE

    @extend_schema(request={"application/x-protobuf": bytes}, responses={202: s.AcceptedSerializer})
    def post(self, request: Request) -> Response:
        return self._accept(request)


class NodeTelemetryView(APIView):
    """A node's series for charts: ?metric=&from=&to=&step= (without metric: its metrics)."""

    access = READ

    @extend_schema(
        parameters=[
            OpenApiParameter("metric", str),
            OpenApiParameter("from", str, description="RFC 3339; default an hour ago"),
            OpenApiParameter("to", str, description="RFC 3339; default now"),
            OpenApiParameter("step", float, description="Seconds per averaged point"),
        ],
        responses={200: OpenApiResponse(description="The node's series or metric names.")},
    )
    def get(self, request: Request, name: str) -> Response:
        if not node_exists(name):
            raise ApplicationError(f"No node named {name!r}.", status_code=404)
        query = s.SeriesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        args = query.validated_data
        end = args.get("end") or timezone.now()
        start = args.get("start") or end - timedelta(hours=1)
        if start >= end:
            raise ApplicationError("`from` must be before `to`.", errors={"from": ["after to"]})
        metric = args.get("metric")
        if not metric:
            return Response({"node": name, "metrics": node_metric_names(node=name)})
        series, truncated = node_series(
            node=name, metric=metric, start=start, end=end, step_s=args.get("step")
        )
        return Response(
            {
                "node": name,
                "metric": metric,
                "from": start.isoformat(),
                "to": end.isoformat(),
                "step": args.get("step"),
                "truncated": truncated,
                "series": [
                    {"labels": x.labels, "points": [[t.isoformat(), v] for t, v in x.points]}
                    for x in series
                ],
            }
        )


class LatestView(APIView):
    """Every node's latest telemetry, its age and whether it is stale."""

    access = READ

    @extend_schema(responses={200: OpenApiResponse(description="{node: latest state}")})
    def get(self, request: Request) -> Response:
        now = timezone.now()
        return Response({n: t.to_dict(now) for n, t in sorted(latest_fleet_state().items())})


class NodeLatencyView(APIView):
    """The node's latency health from its exporters' histograms: per kind (TTFT, end-to-end),
    the bucket holding the p95 over the last LOCUS_NODE_LATENCY_WINDOW_SECONDS. A node-health
    signal with the exporter's bucket bounds, never an SLO measure (breaches judge SLOs on
    their own requests' outcomes)."""

    access = READ

    @extend_schema(responses={200: s.NodeLatencySerializer})
    def get(self, request: Request, name: str) -> Response:
        if not node_exists(name):
            raise ApplicationError(f"No node named {name!r}.", status_code=404)
        found = node_latency(node=name, now=timezone.now())
        return Response(
            {
                "node": name,
                "window_s": conf.node_latency_window_seconds(),
                "basis": "exporter histograms",
                **{kind: None if b is None else b.to_dict() for kind, b in found.items()},
            }
        )


FILTERS = ("status", "severity", "slo", "node", "model", "metric")


class BreachViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """SLA breaches, newest first; filter with ?status=&severity=&slo=&node=&model=&metric=
    (`node`: breaches whose budget the node burned)."""

    serializer_class = s.BreachSerializer
    access = {"list": VIEWERS, "burn_rates": VIEWERS, "OPTIONS": VIEWERS}
    filter_backends: list[Any] = []

    def get_queryset(self) -> Any:
        p = self.request.query_params
        return breach_list(**{name: p.get(name) for name in FILTERS}).prefetch_related("burning")

    @extend_schema(parameters=[OpenApiParameter(n, str) for n in FILTERS])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        responses={
            200: OpenApiResponse(
                description="The burn-rate rules, and each SLO's burn rates per SLI and rule now."
            )
        }
    )
    @action(detail=False, methods=["get"], url_path="burn-rates")
    def burn_rates(self, request: Request) -> Response:
        """What the breaches are judged by, now: the rules and each SLO's burn rates."""
        return Response(slo_burn_rates(now=timezone.now()))
