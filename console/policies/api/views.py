"""Policy versions and rollouts: viewers read, admins act."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access.identity import Identity, identity_of
from console.access.permissions import ADMINS, VIEWERS
from console.api.errors import ApplicationError
from console.placement.engine.runtime import runtime
from console.policies import jobs, services
from console.policies.api import serializers as s
from console.policies.canary_report import canary_report, evaluation_defaults
from console.policies.choices import PolicyState
from console.policies.models import PolicyTransition, PolicyVersion, TrainingRun
from console.policies.selectors import rollout_state

READ = {"list": VIEWERS, "retrieve": VIEWERS, "OPTIONS": VIEWERS}


def _caller(request: Request) -> Identity:
    """Who is calling: a signed-in user or an API key (`key:NAME`). Every route here needs
    an authenticated caller, so there always is one."""
    identity = identity_of(request.user)
    if identity is None:  # pragma: no cover - RolePermission lets no anonymous caller in
        raise ApplicationError("Sign in or send an API key.", status_code=401)
    return identity


def trace_path(name: str | None, default: str | None = None) -> str:
    """A trace inside the traces directory; callers cannot point the worker elsewhere.
    Without a name: `default`, or the configured evaluation trace."""
    if not name:
        return default or settings.LOCUS_EVALUATION_TRACE
    base = Path(settings.LOCUS_TRACES_DIR).resolve()
    path = (base / name).resolve()
    if base not in path.parents or not path.is_file():
        raise ApplicationError(
            f"No trace {name!r} in the traces directory.",
            errors={"trace": [f"Choose a file in {base}."]},
        )
    return str(path)


class PolicyVersionViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    queryset = PolicyVersion.objects.select_related(
        "registered_by", "approved_by", "registered_by_person", "approved_by_person"
    )
    serializer_class = s.PolicyVersionSerializer
    access = READ | {
        a: ADMINS
        for a in ("create", "approve", "shadow", "canary", "promote", "rollback", "evaluate")
    }
    filterset_fields = ["state", "kind", "name"]
    ordering_fields = ["registered_at", "name"]

    @extend_schema(request=s.PolicyRegisterSerializer, responses={201: s.PolicyVersionSerializer})
    def create(self, request: Request) -> Response:
        """Register a heuristic or a directory written by `optimizer train`."""
        body = s.PolicyRegisterSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        policy = services.policy_register(registered_by=_caller(request), **body.validated_data)
        return Response(s.PolicyVersionSerializer(policy).data, status=status.HTTP_201_CREATED)

    def _transition(self, request: Request, verb: str) -> Response:
        body = s.TransitionRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        policy = services.policy_transition(
            policy=self.get_object(), action=verb, actor=_caller(request), **body.validated_data
        )
        runtime().refresh()  # this process serves the new rollout at once
        return Response(s.PolicyVersionSerializer(policy).data)

    @extend_schema(request=s.TransitionRequestSerializer, responses=s.PolicyVersionSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        """Approve an evaluated candidate (an admin other than the one who registered it)."""
        return self._transition(request, "approve")

    @extend_schema(request=s.TransitionRequestSerializer, responses=s.PolicyVersionSerializer)
    @action(detail=True, methods=["post"])
    def shadow(self, request: Request, pk: str) -> Response:
        """Score every live request with this version too, without acting on it."""
        return self._transition(request, "shadow")

    @extend_schema(request=s.TransitionRequestSerializer, responses=s.PolicyVersionSerializer)
    @action(detail=True, methods=["post"])
    def canary(self, request: Request, pk: str) -> Response:
        """Serve `canary_share` of live traffic (sticky per session_id) with this version."""
        return self._transition(request, "canary")

    @extend_schema(request=s.TransitionRequestSerializer, responses=s.PolicyVersionSerializer)
    @action(detail=True, methods=["post"])
    def promote(self, request: Request, pk: str) -> Response:
        """Make this version active; the previous active version retires."""
        return self._transition(request, "promote")

    @extend_schema(request=s.TransitionRequestSerializer, responses=s.PolicyVersionSerializer)
    @action(detail=True, methods=["post"])
    def rollback(self, request: Request, pk: str) -> Response:
        """Take this version out of service (restoring the previous active one if needed)."""
        return self._transition(request, "rollback")

    @extend_schema(
        request=s.EvaluationRequestSerializer, responses={202: s.PolicyEvaluationSerializer}
    )
    @action(detail=True, methods=["post"])
    def evaluate(self, request: Request, pk: str) -> Response:
        """Queue a simulator evaluation against the active policy and every heuristic."""
        body = s.EvaluationRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        evaluation = jobs.evaluation_request(
            policy=self.get_object(),
            trace=trace_path(body.validated_data.get("trace")),
            loads=body.validated_data.get("loads", settings.LOCUS_EVALUATION_LOADS),
            seeds=body.validated_data.get("seeds", settings.LOCUS_EVALUATION_SEEDS),
            recorded_hours=body.validated_data.get("recorded_hours"),
            calibration_run=body.validated_data.get("calibration_run"),
            requested_by=_caller(request),
        )
        evaluation.refresh_from_db()
        return Response(
            s.PolicyEvaluationSerializer(evaluation).data, status=status.HTTP_202_ACCEPTED
        )


class PolicyTransitionViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The audit trail of every rollout transition."""

    queryset = PolicyTransition.objects.select_related("version")
    serializer_class = s.PolicyTransitionSerializer
    access = {"list": VIEWERS, "OPTIONS": VIEWERS}
    filterset_fields = ["version", "to_state", "actor"]


class RolloutView(APIView):
    access = {"GET": VIEWERS, "HEAD": VIEWERS, "OPTIONS": VIEWERS}

    @extend_schema(
        responses={200: OpenApiResponse(description="Who serves traffic now, and how it does.")}
    )
    def get(self, request: Request) -> Response:
        """The serving policies, the evaluation defaults and, during a canary, both arms'
        live outcome figures, the verdict from the attainment difference's 95% interval, the
        headline (attributed) cost, the elapsed time and the watchdog's state and next check
        (docs/operations.md "Watching a canary")."""
        rt = runtime()
        rt.ensure_started()
        snapshot = rt.engine.snapshot
        # Without a snapshot (an empty inventory builds none) the database still says who
        # would serve: the snapshot reads the same rows.
        rollout = (
            snapshot.rollout if snapshot is not None else rollout_state(default=rt.default_policy)
        )
        body: dict[str, Any] = {
            "active": rollout.active.key,
            "shadow": rollout.shadow.key if rollout.shadow else None,
            "canary": rollout.canary.key if rollout.canary else None,
            "canary_share": rollout.canary_share,
        }
        body["evaluation_defaults"] = evaluation_defaults()
        canary = PolicyVersion.objects.filter(state=PolicyState.CANARY).first()
        if canary is not None:
            body.update(canary_report(canary))
        return Response(body)


class TrainingRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    queryset = TrainingRun.objects.all()
    serializer_class = s.TrainingRunSerializer
    access = READ | {"create": ADMINS}

    @extend_schema(request=s.TrainingRunRequestSerializer, responses={202: s.TrainingRunSerializer})
    def create(self, request: Request) -> Response:
        """Start a PPO training run on the inventory's fleet (a worker runs it). By default it
        fine-tunes the shipped generalist on the fleet's configured trace; a result that
        validates below the best heuristic is not registered unless
        `register_below_baseline` is true."""
        body = s.TrainingRunRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        data["trace"] = trace_path(data.get("trace"), settings.LOCUS_FLEET_TRACE)
        data.setdefault("init", settings.LOCUS_TRAINING_INIT)
        run = jobs.training_start(config=data, started_by=_caller(request))
        run.refresh_from_db()
        return Response(s.TrainingRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)
