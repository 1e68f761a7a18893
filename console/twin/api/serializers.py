"""Request and response bodies of the twin API."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from rest_framework import serializers

from console.api.fields import StrictFloatField
from console.twin.choices import RunStatus
from console.twin.models import CalibrationRun, ProposalDecision
from console.twin.selectors import proposal_changes, proposal_link_changes, proposal_verdict

# RFC 3339 §5.6 `date-time` (fractions of up to 9 digits; `fromisoformat` keeps 6).
RFC_3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)


class Rfc3339Field(serializers.Field):  # type: ignore[type-arg]
    """An RFC 3339 date-time: date, time and an explicit offset (`Z` or ±hh:mm). A time
    without an offset is refused rather than read in the server's zone."""

    default_error_messages = {
        "invalid": "Expected an RFC 3339 date-time with an offset, e.g. 2026-11-24T09:00:00Z.",
    }

    def to_internal_value(self, data: Any) -> datetime:
        if not isinstance(data, str) or not RFC_3339.fullmatch(data):
            self.fail("invalid")
        try:
            return datetime.fromisoformat(data.upper())
        except ValueError:  # well-formed but impossible, e.g. month 13
            self.fail("invalid")

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


class WindowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """`?since=&until=`: a window of recorded traffic, at most
    LOCUS_OBSERVATIONS_MAX_HOURS wide."""

    since = Rfc3339Field()
    until = Rfc3339Field()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["until"] <= attrs["since"]:
            raise serializers.ValidationError({"until": ["Must be later than since."]})
        hours = settings.LOCUS_OBSERVATIONS_MAX_HOURS
        if attrs["until"] - attrs["since"] > timedelta(hours=hours):
            raise serializers.ValidationError(
                {"until": [f"The window may span at most {hours:g} hours."]}
            )
        return attrs


class StrictIntegerField(serializers.IntegerField):
    """A JSON whole number only: `"5"`, `5.0` and `true` are refused."""

    default_error_messages = {"invalid": "A whole number is required (not a string)."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(data)


class CalibrationRequestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Calibrate against the traffic recorded in the last `hours`."""

    hours = StrictFloatField(min_value=0.01)
    min_samples = StrictIntegerField(min_value=1, max_value=1_000_000, required=False)

    def validate_hours(self, value: float) -> float:
        limit = settings.LOCUS_OBSERVATIONS_MAX_HOURS
        if value > limit:
            raise serializers.ValidationError(f"At most {limit:g} hours.")
        return value


class ProposalDecisionRequestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    reason = serializers.CharField(max_length=1000)

    def validate_reason(self, value: str) -> str:
        if "\x00" in value:
            raise serializers.ValidationError("Must not contain NUL characters.")
        return value


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false only: `"true"`, `1` and `"yes"` are refused, so an override is
    never given by accident."""

    default_error_messages = {"invalid": "Must be true or false (a JSON boolean)."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class ProposalApplyRequestSerializer(ProposalDecisionRequestSerializer):
    """Applying: a reason, and `override: true` to apply a proposal whose verdict is
    'no_improvement' (recorded in the audit entry)."""

    override = StrictBooleanField(required=False, default=False)


class ProposalDecisionSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    class Meta:
        model = ProposalDecision
        fields = ["id", "run", "action", "actor", "reason", "override", "changes", "at"]


class CalibrationRunSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    changes = serializers.SerializerMethodField(
        help_text="The profile values the proposal would set (nominal, fitted, interval)."
    )
    link_changes = serializers.SerializerMethodField(
        help_text="The link bandwidths the proposal would set (a, b, field bandwidth_gbps, "
        "nominal, fitted, interval, samples): only those the split requests' KV transfers "
        "pinned down (docs/twin.md)."
    )
    verdict = serializers.SerializerMethodField(
        help_text="Whether the proposal improves the held-out errors: verdict (improved or "
        "no_improvement), reason, the metrics that got worse, held-out requests."
    )
    decisions = ProposalDecisionSerializer(many=True, read_only=True)

    class Meta:
        model = CalibrationRun
        fields = [
            "id",
            "since",
            "until",
            "min_samples",
            "status",
            "progress",
            "message",
            "error",
            "observations",
            "proposal",
            "verdict",
            "changes",
            "link_changes",
            "report",
            "requested_by_name",
            "created_at",
            "finished_at",
            "decisions",
        ]

    def get_changes(self, run: CalibrationRun) -> list[dict[str, Any]]:
        return proposal_changes(run)

    def get_link_changes(self, run: CalibrationRun) -> list[dict[str, Any]]:
        return proposal_link_changes(run)

    def get_verdict(self, run: CalibrationRun) -> dict[str, Any] | None:
        return proposal_verdict(run) if run.status == RunStatus.SUCCEEDED else None
