from django.contrib import admin
from django.http import HttpRequest

from console.inventory.models import (
    Accelerator,
    FleetSettings,
    Link,
    Node,
    NodeStateChange,
    Profile,
    ServedModel,
    Site,
    Slo,
    Source,
    WorkloadShare,
)


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ("name", "tier", "region", "jurisdiction")
    list_filter = ("tier", "region", "jurisdiction")
    search_fields = ("name",)


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    list_display = ("site_a", "site_b", "rtt_ms", "bandwidth_gbps", "egress_usd_per_gb")


@admin.register(Accelerator)
class AcceleratorAdmin(admin.ModelAdmin):
    list_display = ("name", "memory_gib")


@admin.register(ServedModel)
class ServedModelAdmin(admin.ModelAdmin):
    list_display = ("name", "memory_gib", "kv_bytes_per_token")


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = (
        "model",
        "accelerator",
        "prefill_tokens_per_s",
        "decode_step_ms",
        "decode_step_ms_per_seq",
        "max_batch",
    )
    list_filter = ("model", "accelerator")


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("name", "site", "accelerator", "gpus", "usd_per_hour", "role", "state")
    list_filter = ("state", "role", "site__tier", "accelerator")
    search_fields = ("name",)
    filter_horizontal = ("served_models",)


@admin.register(Slo)
class SloAdmin(admin.ModelAdmin):
    list_display = ("name", "ttft_p95_ms", "e2e_p95_ms", "residency", "max_usd_per_1k")


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = ("name", "site", "share", "slo")


admin.site.register(FleetSettings)
admin.site.register(WorkloadShare)


@admin.register(NodeStateChange)
class NodeStateChangeAdmin(admin.ModelAdmin):
    """Read-only: the audit trail is written by `node_change_state` alone."""

    list_display = ("at", "node", "action", "from_state", "to_state", "actor", "reason")
    list_filter = ("action", "to_state")
    search_fields = ("node__name", "actor", "reason")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
