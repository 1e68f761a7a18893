"""GET /api/v1/nodes/{name}/why: one node's breaches, breaker, telemetry, state changes and
recent decisions, with the reasons in plain words (console/placement/node_why.py)."""

from __future__ import annotations

from rest_framework import serializers


class NodeBreachSerializer(serializers.Serializer):
    breach_id = serializers.IntegerField()
    slo = serializers.CharField()
    severity = serializers.CharField()
    metric = serializers.CharField()
    open = serializers.BooleanField()
    opened_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    burn_rate = serializers.FloatField(
        allow_null=True, help_text="The node's own burn rate of the SLO's budget (pairs' max)."
    )
    requests = serializers.IntegerField(allow_null=True)
    bad = serializers.IntegerField(allow_null=True)


class NodeWhySerializer(serializers.Serializer):
    """GET /api/v1/nodes/{name}/why (console/placement/node_why.py)."""

    node = serializers.CharField()
    state = serializers.CharField()
    reasons = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField()),
        help_text="Why the node looks as it does, worst first: {kind, level, text}; "
        "kind is breach, breaker, stale, state or outcomes; level bad, warn or info.",
    )
    breaches = NodeBreachSerializer(many=True, help_text="Open, and resolved in the last 24 h.")
    breaker = serializers.DictField(
        help_text="`state`: this server's breaker (closed, open, half_open; null before its "
        "engine started); `last_change`: the node's last breaker move in any process."
    )
    telemetry = serializers.DictField(
        allow_null=True, help_text="updated_at, age_s, stale_after_s, stale; null: never."
    )
    state_changes = serializers.ListField(child=serializers.DictField())
    outcomes = serializers.DictField(
        help_text="Over `window_s`: decisions, outcomes, failed, slo_missed, picked_in_breach."
    )
    recent_decisions = serializers.ListField(
        child=serializers.DictField(),
        help_text="The latest decisions placed here, with `picked_in_breach` (a breach id).",
    )
