"""API keys (admins) and the caller's identity (anyone signed in)."""

from __future__ import annotations

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access.api import serializers as s
from console.access.choices import Role
from console.access.identity import identity_of
from console.access.models import ApiKey
from console.access.permissions import ADMINS
from console.access.roles import primary_role, roles_of
from console.access.services import api_key_create, api_key_revoke
from console.api.errors import ApplicationError

EVERYONE = frozenset(Role.values)


class ApiKeyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    queryset = ApiKey.objects.select_related("owner")
    serializer_class = s.ApiKeySerializer
    access = {a: ADMINS for a in ("list", "retrieve", "create", "revoke", "OPTIONS")}
    filterset_fields = ["role"]
    ordering_fields = ["name", "created_at", "last_used_at"]

    @extend_schema(request=s.ApiKeyCreateSerializer, responses={201: s.IssuedApiKeySerializer})
    def create(self, request: Request) -> Response:
        """Issue a key. The response carries the key itself; it cannot be shown again."""
        body = s.ApiKeyCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = request.user if isinstance(request.user, User) else None
        owner = user or _owner_of_calling_key(request)
        issued = api_key_create(created_by=user, owner=owner, **body.validated_data)
        data = dict(s.ApiKeySerializer(issued.api_key).data, key=issued.secret)
        return Response(data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=s.ApiKeySerializer)
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str) -> Response:
        """Revoke a key; calls with it fail from now on."""
        return Response(s.ApiKeySerializer(api_key_revoke(api_key=self.get_object())).data)


def _owner_of_calling_key(request: Request) -> User:
    """A key made with a key acts for the same person; a key without a person (made by the
    CLI) may not make keys, or it could mint identities nobody answers for."""
    identity = identity_of(request.user)
    owner = (
        User.objects.filter(pk=identity.person_id).first()
        if identity is not None and identity.person_id is not None
        else None
    )
    if owner is None:
        raise ApplicationError(
            "This API key belongs to no person, so it may not create keys. Create keys "
            "signed in, or with a key owned by a person (create_api_key --owner).",
            status_code=403,
        )
    return owner


class MeView(APIView):
    access = {"GET": EVERYONE, "HEAD": EVERYONE, "OPTIONS": EVERYONE}

    @extend_schema(responses=s.MeSerializer)
    def get(self, request: Request) -> Response:
        user = request.user
        return Response(
            {
                "username": getattr(user, "username", str(user)),
                "role": primary_role(user),
                "roles": sorted(roles_of(user)),
            }
        )
