from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest

from console.access.models import ApiKey
from console.access.services import api_key_create, api_key_revoke


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "role", "owner", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("role",)
    search_fields = ("name", "prefix")
    readonly_fields = (
        "owner",
        "prefix",
        "digest",
        "created_at",
        "created_by",
        "last_used_at",
        "revoked_at",
    )
    fields = ("name", "role", *readonly_fields)
    actions = ["revoke"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        user = request.user if isinstance(request.user, User) else None
        issued = api_key_create(name=obj.name, role=obj.role, created_by=user, owner=user)
        obj.pk = issued.api_key.pk
        obj.refresh_from_db()
        messages.warning(request, f"Copy the key now, it is not shown again: {issued.secret}")

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for key in queryset:
            api_key_revoke(api_key=key)
