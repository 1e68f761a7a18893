"""Query-string filters for calibration runs (`?status=succeeded&proposal=pending`)."""

from __future__ import annotations

import django_filters

from console.twin.choices import ProposalState, RunStatus
from console.twin.models import CalibrationRun


class CalibrationRunFilterSet(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=RunStatus.choices)
    proposal = django_filters.MultipleChoiceFilter(choices=ProposalState.choices)

    class Meta:
        model = CalibrationRun
        fields = ["status", "proposal"]
