"""A recorded decision's receipt: why this node, as GET /api/v1/decisions shows it (the
engine writes it, console/placement/engine/; `decisions.DecisionRecordSerializer` adds what is
read from the breaches and the candidates when the record is read)."""

from __future__ import annotations

from rest_framework import serializers

from console.placement.doors.answers import GuardNoteSerializer, ProbeNoteSerializer


class ReceiptCandidateSerializer(serializers.Serializer):
    node = serializers.CharField()
    site = serializers.CharField()
    score = serializers.FloatField()
    ttft_ms = serializers.FloatField(help_text="Estimated time to first token.")
    e2e_ms = serializers.FloatField(help_text="Estimated end-to-end latency.")
    prefill_ms = serializers.FloatField(
        required=False,
        help_text="Estimated prefill compute time on the node (receipts from version 2).",
    )
    cost_usd = serializers.FloatField(help_text="Estimated cost of the request.")
    kv_used = serializers.FloatField(help_text="KV cache use the engine saw (0..1).")
    queue = serializers.IntegerField(help_text="Queue depth the engine saw.")


class ReceiptSplitSerializer(serializers.Serializer):
    prefill_node = serializers.CharField(help_text="The node that prefilled; the pick decoded.")
    prefill_site = serializers.CharField()
    kv_bytes = serializers.IntegerField(help_text="The prompt's KV moved to the decode node.")
    transfer_ms = serializers.FloatField(
        help_text="Estimated KV transfer: the link's RTT plus the bytes at its bandwidth."
    )
    estimated_ttft_split_ms = serializers.FloatField(help_text="Estimated TTFT of the pair.")
    estimated_ttft_mixed_ms = serializers.FloatField(
        allow_null=True,
        help_text="Estimated TTFT of the one-node answer it replaced (null: none could answer).",
    )


class PickedInBreachSerializer(serializers.Serializer):
    breach_id = serializers.IntegerField()
    slo = serializers.CharField()
    severity = serializers.CharField(help_text="`page` or `ticket` (empty: a pre-rules breach).")
    opened_at = serializers.DateTimeField()
    open_breaches = serializers.IntegerField(help_text="Breaches naming the node at the time.")


class LearnedFeatureSerializer(serializers.Serializer):
    feature = serializers.CharField(help_text="A feature of the scorer's rows (policy.json).")
    pick = serializers.FloatField(help_text="The pick's value of the feature.")
    runner_up = serializers.FloatField(help_text="The runner-up's value.")
    contribution = serializers.FloatField(
        help_text="Its share of the scorer's margin of the pick over the runner-up."
    )


class LearnedWhySerializer(serializers.Serializer):
    method = serializers.CharField(help_text="`integrated-gradients` (Sundararajan et al. 2017).")
    steps = serializers.IntegerField(help_text="Points of the path integral.")
    runner_up = serializers.CharField()
    margin = serializers.FloatField(help_text="The pick's score minus the runner-up's.")
    scorer_margin = serializers.FloatField(help_text="The part the scorer's network gives.")
    cost_term = serializers.FloatField(
        help_text="The part policy.json's decision_cost_weight gives (price on estimated cost)."
    )
    residual = serializers.FloatField(
        help_text="The scorer margin the features' contributions leave (quadrature error)."
    )
    features = LearnedFeatureSerializer(many=True, help_text="Largest contributions first.")


class AgainstRunnerUpSerializer(serializers.Serializer):
    runner_up = serializers.CharField()
    worse = serializers.ListField(
        child=serializers.ChoiceField(choices=["ttft_ms", "e2e_ms", "cost_usd"]),
        help_text="The pick's estimates worse than the runner-up's.",
    )
    text = serializers.CharField()


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
    guard = GuardNoteSerializer(
        required=False, help_text="For a learned policy: what its trust region did."
    )
    split = ReceiptSplitSerializer(
        required=False,
        help_text="Split decisions only (receipts from version 3): why a prefill node and a "
        "decode node, the KV transfer priced in.",
    )
    probe = ProbeNoteSerializer(
        required=False,
        help_text="An exploration probe's answer only (receipts from version 4): the probe, "
        "its node, what the policy would have picked (docs/twin.md).",
    )
    picked_in_breach = PickedInBreachSerializer(
        required=False,
        allow_null=True,
        help_text="The open SLA breach naming the picked node when it was picked (the most "
        "severe), or null. Read from the breaches when the record is read, not stored.",
    )
    learned = LearnedWhySerializer(
        required=False,
        help_text="Why a trained scorer preferred the pick over the runner-up: kept for one "
        "learned decision in LOCUS_LEARNED_EXPLAIN_EVERY and those asked to explain.",
    )
    against_runner_up = AgainstRunnerUpSerializer(
        required=False,
        allow_null=True,
        help_text="When the pick's own estimates are worse than the runner-up's, which; null "
        "otherwise. Read from the candidates when the record is read.",
    )
