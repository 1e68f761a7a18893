from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework import serializers

from console.access.choices import Role
from console.access.models import ApiKey


class ApiKeySerializer(serializers.ModelSerializer):
    # Read-only: a key always acts for whoever makes it (or the key it is made with).
    owner: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="The person the key acts for; null only for keys made by the CLI.",
    )

    class Meta:
        model = ApiKey
        fields = [
            "id",
            "name",
            "role",
            "owner",
            "prefix",
            "created_at",
            "last_used_at",
            "revoked_at",
        ]
        read_only_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]


class ApiKeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    role = serializers.ChoiceField(choices=Role.choices)


class IssuedApiKeySerializer(ApiKeySerializer):
    key = serializers.CharField(read_only=True, help_text="The bearer token; shown only once.")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField(allow_null=True)
    roles = serializers.ListField(child=serializers.CharField())
