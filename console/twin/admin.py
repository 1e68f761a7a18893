from django.contrib import admin

from console.twin.models import CalibrationRun, ProposalDecision


@admin.register(CalibrationRun)
class CalibrationRunAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("id", "status", "proposal", "since", "until", "observations", "created_at")
    list_filter = ("status", "proposal")
    readonly_fields = [f.name for f in CalibrationRun._meta.fields]


@admin.register(ProposalDecision)
class ProposalDecisionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("run", "action", "actor", "reason", "at")
    readonly_fields = ("run", "action", "actor", "reason", "changes", "at")
