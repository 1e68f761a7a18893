"""The answer of GET /api/v1/overview (console/placement/selectors.decision_overview), for the
schema the dashboard's types are generated from."""

from __future__ import annotations

from rest_framework import serializers

from telemetry.models import BreachSeverity

SEVERITIES = BreachSeverity.choices


class BurnRateSerializer(serializers.Serializer):
    """One burn-rate rule on the SLO's within-targets SLI, judged now (telemetry/slo_rules.py)."""

    severity = serializers.ChoiceField(choices=SEVERITIES)
    factor = serializers.FloatField(help_text="The burn rate the rule needs in both windows.")
    long_window_s = serializers.FloatField()
    short_window_s = serializers.FloatField()
    requests = serializers.IntegerField(help_text="The SLO's requests in the long window.")
    long_burn_rate = serializers.FloatField(
        allow_null=True, help_text="Null with no requests in the window."
    )
    short_burn_rate = serializers.FloatField(allow_null=True)
    holds = serializers.BooleanField(
        help_text="Both windows burn faster than `factor` with enough requests: a breach opens "
        "once this has held for the rule's hold time."
    )


class SloAttainmentSerializer(serializers.Serializer):
    slo = serializers.CharField()
    outcomes = serializers.IntegerField()
    met = serializers.IntegerField()
    attainment = serializers.FloatField(help_text="met / outcomes over `window_s`.")
    objective = serializers.FloatField(
        allow_null=True,
        help_text="The share of requests that must be within targets (0.95 for p95 targets); "
        "null for an SLO no longer defined.",
    )
    burn_rates = BurnRateSerializer(many=True, help_text="One per rule, page first.")
    open_breach = serializers.ChoiceField(
        choices=SEVERITIES,
        allow_null=True,
        help_text="The worst level of the SLO's open breaches on any SLI; null if none is open.",
    )
    open_breach_metric = serializers.CharField(
        allow_null=True, help_text="The SLI of that breach (within_targets or error_rate)."
    )


class PolicyShareSerializer(serializers.Serializer):
    policy = serializers.CharField(help_text="name@version")
    arm = serializers.CharField()
    decisions = serializers.IntegerField()


class OverviewSerializer(serializers.Serializer):
    window_s = serializers.FloatField()
    decisions_per_s = serializers.FloatField(help_text="Over the last minute.")
    decisions_in_window = serializers.IntegerField()
    slo_attainment = SloAttainmentSerializer(many=True)
    by_policy = PolicyShareSerializer(many=True)
