"""The decision API's answer shapes, for the OpenAPI schema (requests: `bodies.py`)."""

from __future__ import annotations

from rest_framework import serializers

from console.placement.models import DecisionRecord


class PolicyNameSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField()


class CandidateSerializer(serializers.Serializer):
    node = serializers.CharField()
    site = serializers.CharField()
    tier = serializers.CharField()
    score = serializers.FloatField()
    rank = serializers.IntegerField()
    estimated_ttft_ms = serializers.FloatField()
    estimated_e2e_ms = serializers.FloatField()
    estimated_cost_usd = serializers.FloatField()
    queue_depth = serializers.IntegerField()
    running = serializers.IntegerField()
    kv_used_fraction = serializers.FloatField()
    prefix_blocks = serializers.IntegerField()
    telemetry_age_s = serializers.FloatField(allow_null=True)


class RejectedSerializer(serializers.Serializer):
    node = serializers.CharField()
    reason = serializers.CharField()


class PlacementAnswerSerializer(serializers.Serializer):
    decision_id = serializers.CharField()
    node = serializers.CharField()
    site = serializers.CharField()
    fallbacks = serializers.ListField(child=serializers.CharField())
    policy = PolicyNameSerializer()
    arm = serializers.ChoiceField(choices=["active", "canary"])
    degraded = serializers.CharField(
        required=False, help_text="Set when the fallback heuristic decided."
    )
    candidates = CandidateSerializer(many=True, required=False)
    rejected = RejectedSerializer(many=True, required=False)


class PlacementBatchAnswerSerializer(serializers.Serializer):
    decisions = serializers.ListField(
        child=serializers.DictField(),
        help_text="One answer per request, in order; an "
        "unplaceable request holds an `error` object.",
    )


class UnplaceableSerializer(serializers.Serializer):
    message = serializers.CharField()
    reasons = serializers.DictField(child=serializers.CharField())


class OutcomeAnswerSerializer(serializers.Serializer):
    decision_id = serializers.CharField()
    node = serializers.CharField()
    slo_met = serializers.BooleanField()
    breaker = serializers.CharField()


class ReceiptCandidateSerializer(serializers.Serializer):
    node = serializers.CharField()
    site = serializers.CharField()
    score = serializers.FloatField()
    ttft_ms = serializers.FloatField(help_text="Estimated time to first token.")
    e2e_ms = serializers.FloatField(help_text="Estimated end-to-end latency.")
    cost_usd = serializers.FloatField(help_text="Estimated cost of the request.")
    kv_used = serializers.FloatField(help_text="KV cache use the engine saw (0..1).")
    queue = serializers.IntegerField(help_text="Queue depth the engine saw.")


class ReceiptSerializer(serializers.Serializer):
    # Not required: records from before receipts hold `{}`.
    v = serializers.IntegerField(required=False, help_text="Receipt format version.")
    candidates = ReceiptCandidateSerializer(
        many=True,
        required=False,
        help_text="The best candidates in rank order; the first is the pick.",
    )
    rejected = serializers.DictField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Rejected nodes counted by reason.",
    )


class DecisionRecordSerializer(serializers.ModelSerializer):
    receipt = ReceiptSerializer(
        read_only=True,
        help_text="Why this node: empty for decisions recorded before receipts were kept.",
    )

    class Meta:
        model = DecisionRecord
        fields = "__all__"
