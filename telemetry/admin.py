"""Admin: breaches and the inbox are worth looking at; readings are read through the API."""

from django.contrib import admin

from telemetry.models import Series, SlaBreach, TelemetryBatch


@admin.register(SlaBreach)
class SlaBreachAdmin(admin.ModelAdmin):
    list_display = ["slo", "model", "node", "metric", "status", "observed", "opened_at"]
    list_filter = ["status", "metric", "slo"]
    search_fields = ["node", "model"]


@admin.register(TelemetryBatch)
class TelemetryBatchAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "node", "received_at", "attempts", "last_error"]
    exclude = ["payload"]
    readonly_fields = ["kind", "node", "received_at", "enqueued_at", "attempts", "last_error"]


@admin.register(Series)
class SeriesAdmin(admin.ModelAdmin):
    list_display = ["node", "metric", "labels"]
    search_fields = ["node", "metric"]
