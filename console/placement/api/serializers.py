"""The decision API's request and answer shapes (CONTRACTS §4)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.placement.models import DecisionRecord

MAX_PREFIX_HASHES = 4096  # 2M tokens of 512-token blocks: beyond any context window
MAX_BATCH = 1000


class PlacementRequestSerializer(serializers.Serializer):
    model = serializers.CharField(max_length=200)
    source = serializers.CharField(max_length=100, required=False)  # type: ignore[assignment]
    site = serializers.CharField(
        max_length=100, required=False, help_text="For callers without a registered source."
    )
    slo = serializers.CharField(
        max_length=100, required=False, help_text="Defaults to the source's SLO."
    )
    prompt_tokens = serializers.IntegerField(min_value=0, max_value=10_000_000)
    max_output_tokens = serializers.IntegerField(min_value=1, max_value=10_000_000)
    prefix_hashes = serializers.ListField(
        child=serializers.IntegerField(min_value=-(2**63), max_value=2**63 - 1),
        required=False,
        max_length=MAX_PREFIX_HASHES,
        help_text="Ids of the prompt's 512-token blocks, in order.",
    )
    session_id = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text="Keeps a session on one rollout arm.",
    )
    explain = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("source" in attrs) == ("site" in attrs):
            raise serializers.ValidationError({"source": ["Give exactly one of source and site."]})
        return attrs


class PlacementBatchSerializer(serializers.Serializer):
    requests = PlacementRequestSerializer(  # type: ignore[call-arg]
        many=True, allow_empty=False, max_length=MAX_BATCH
    )


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


class OutcomeSerializer(serializers.Serializer):
    ttft_ms = serializers.FloatField(min_value=0, required=False, allow_null=True)
    e2e_ms = serializers.FloatField(min_value=0, required=False, allow_null=True)
    ok = serializers.BooleanField()


class OutcomeAnswerSerializer(serializers.Serializer):
    decision_id = serializers.CharField()
    node = serializers.CharField()
    slo_met = serializers.BooleanField()
    breaker = serializers.CharField()


class DecisionRecordSerializer(serializers.ModelSerializer):
    class Meta:
        model = DecisionRecord
        fields = "__all__"
