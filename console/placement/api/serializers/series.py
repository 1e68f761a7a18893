"""GET /api/v1/series/fleet: the query's range and step, and the fleet's series on one time
axis (console/placement/series.py computes them)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from console.buckets import MAX_BUCKETS, pick_step

MAX_SERIES_RANGE = timedelta(days=7)


class FleetSeriesQuerySerializer(serializers.Serializer):
    """`?from=&to=&step=` of GET /api/v1/series/fleet: a bounded range, a sane step."""

    start = serializers.DateTimeField(required=False, help_text="Default: an hour before `to`.")
    end = serializers.DateTimeField(required=False, help_text="Default: now.")
    step = serializers.IntegerField(
        required=False, min_value=10, max_value=86400, help_text="Seconds per bucket."
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        # `from` and `to` are Python keywords: read and report them under their URL names.
        names = {"start": "from", "end": "to", "step": "step"}
        raw = {k: data.get(url) for k, url in names.items() if data.get(url) not in (None, "")}
        try:
            values: dict[str, Any] = super().to_internal_value(raw)
        except serializers.ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, dict) else {}
            renamed = {names.get(k, k): v for k, v in detail.items()}
            raise serializers.ValidationError(renamed) from None
        end = values.get("end") or timezone.now()
        start = values.get("start") or end - timedelta(hours=1)
        if start >= end:
            raise serializers.ValidationError({"from": ["Must be before `to`."]})
        if end - start > MAX_SERIES_RANGE:
            raise serializers.ValidationError({"from": ["The range is at most 7 days."]})
        step = values.get("step") or pick_step(start, end)
        if (end - start).total_seconds() / step > MAX_BUCKETS:
            raise serializers.ValidationError(
                {"step": [f"At most {MAX_BUCKETS} points: use a longer step or a shorter range."]}
            )
        return {"start": start, "end": end, "step": step}


class SloSeriesSerializer(serializers.Serializer):
    slo = serializers.CharField()
    objective = serializers.FloatField(help_text="Share of requests that must meet the SLO.")
    ttft_p95_ms = serializers.FloatField(allow_null=True)
    e2e_p95_ms = serializers.FloatField(allow_null=True)
    outcomes = serializers.ListField(child=serializers.IntegerField())
    attainment = serializers.ListField(child=serializers.FloatField(allow_null=True))
    burn_rate = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="Misses over the error budget (1 - objective); above 1 spends it early.",
    )


class RolloutMarkSerializer(serializers.Serializer):
    t = serializers.FloatField(help_text="Epoch seconds.")
    kind = serializers.ChoiceField(choices=["shadow", "canary", "promote", "rollback"])
    policy = serializers.CharField()
    actor = serializers.CharField()
    reason = serializers.CharField()


class SeriesEventSerializer(serializers.Serializer):
    t = serializers.FloatField(help_text="Epoch seconds.")
    kind = serializers.ChoiceField(
        choices=[
            "drain", "cordon", "uncordon", "mark_down", "breaker", "breach_open",
            "breach_resolved",
        ]
    )  # fmt: skip
    subject = serializers.CharField(help_text="The node, or for a breach its SLO.")
    text = serializers.CharField()


class FleetSeriesSerializer(serializers.Serializer):
    """Series on one time axis `t` (bucket starts, epoch seconds); null means no data."""

    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    step = serializers.IntegerField()
    t = serializers.ListField(child=serializers.IntegerField())
    decisions_per_s = serializers.ListField(child=serializers.FloatField())
    latency_us_mean = serializers.ListField(child=serializers.FloatField(allow_null=True))
    latency_us_max = serializers.ListField(child=serializers.FloatField(allow_null=True))
    fallbacks = serializers.ListField(child=serializers.IntegerField())
    breaker_trips = serializers.ListField(child=serializers.IntegerField())
    prefix_hit_rate = serializers.ListField(child=serializers.FloatField(allow_null=True))
    slos = SloSeriesSerializer(many=True)
    marks = RolloutMarkSerializer(many=True)
    events = SeriesEventSerializer(
        many=True, help_text="Node state changes, breaker moves, breaches opening/resolving."
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        # The answer names its range `from` and `to`, as the query does (Python keywords).
        fields = super().get_fields()
        fields["from"] = fields.pop("start")
        fields["to"] = fields.pop("end")
        return fields
