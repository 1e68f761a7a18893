"""The REST door's answer shapes, for the OpenAPI schema (its requests: `bodies.py`)."""

from __future__ import annotations

from rest_framework import serializers


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


class GuardCountsSerializer(serializers.Serializer):
    inside = serializers.IntegerField()
    outside = serializers.IntegerField()
    out_of_distribution = serializers.IntegerField()


class GuardNoteSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(
        choices=["inside", "outside", "out_of_distribution"],
        help_text="What the learned scorer's trust region did: nothing (`inside`: the learned "
        "pick is one the anchor heuristic rates near its own), or let the anchor decide "
        "(`outside`: it is not; `out_of_distribution`: the state is outside training's).",
    )
    anchor = serializers.CharField(help_text="The heuristic the region is drawn around.")
    counts = GuardCountsSerializer(help_text="Decisions per verdict since the policy loaded.")


class ProbeNoteSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The exploration probe (GET /api/v1/probes/{id}).")
    node = serializers.CharField(help_text="The under-observed node it sent the request to.")
    policy_pick = serializers.CharField(help_text="What the policy would have picked.")
    ttft_ms = serializers.FloatField(help_text="The probe node's estimated TTFT.")
    ttft_target_ms = serializers.FloatField(help_text="The request's TTFT target.")


class PlacementAnswerSerializer(serializers.Serializer):
    decision_id = serializers.CharField()
    node = serializers.CharField()
    site = serializers.CharField()
    fallbacks = serializers.ListField(child=serializers.CharField())
    prefill_node = serializers.CharField(
        required=False,
        help_text="Split decisions only: the node that prefills; `node` then decodes.",
    )
    prefill_site = serializers.CharField(required=False, help_text="The prefill node's site.")
    prefill_address = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="The prefill node's `ip:port` (null when the inventory has no address).",
    )
    prefill_fallbacks = serializers.ListField(
        child=serializers.CharField(allow_null=True),
        required=False,
        help_text="When any fallback pair is split: the prefill node for each fallback, in "
        "order (null: that fallback runs both phases).",
    )
    policy = PolicyNameSerializer()
    arm = serializers.ChoiceField(choices=["active", "canary"])
    degraded = serializers.CharField(
        required=False, help_text="Set when the fallback heuristic decided."
    )
    probe = ProbeNoteSerializer(
        required=False,
        help_text="Set when an exploration probe answered instead of the policy (docs/twin.md).",
    )
    candidates = CandidateSerializer(many=True, required=False)
    rejected = RejectedSerializer(many=True, required=False)
    guard = GuardNoteSerializer(
        required=False, help_text="With explain, for a learned policy: its trust region's note."
    )


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
    prefill_node = serializers.CharField(
        required=False, help_text="Split decisions only: the node that prefilled."
    )
    slo_met = serializers.BooleanField()
    breaker = serializers.CharField()
