"""The placement read API's shapes: recorded decisions with their receipts, and the fleet's
series (the decision doors' answers are `doors/answers.py`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from console.buckets import MAX_BUCKETS, pick_step
from console.placement.breach_flags import breaches_around, picked_in_breach
from console.placement.doors.answers import GuardNoteSerializer
from console.placement.models import DecisionRecord
from console.placement.selectors import DecisionQuery
from optimizer.decide.explain import estimates_against_runner_up


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


class DecisionRecordSerializer(serializers.ModelSerializer):
    receipt = ReceiptSerializer(
        read_only=True,
        help_text="Why this node: empty for decisions recorded before receipts were kept.",
    )

    class Meta:
        model = DecisionRecord
        # Block hashes are for observations (GET /api/v1/observations), not decision lists.
        exclude = ["prefix_hashes"]

    def to_representation(self, instance: DecisionRecord) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)
        if not instance.receipt:
            return data | {"receipt": {}}  # recorded before receipts: nothing to flag
        # The view reads the breaches of a whole page at once; a lone record reads its own.
        breaches = self.context.get("breaches")
        if breaches is None:
            breaches = breaches_around([(instance.node, instance.created_at)])
        data["receipt"] = {
            **data["receipt"],
            "picked_in_breach": picked_in_breach(
                node=instance.node, at=instance.created_at, breaches=breaches
            ),
            "against_runner_up": estimates_against_runner_up(
                instance.receipt.get("candidates") or []
            ),
        }
        return data


# `?limit=&offset=` belong to the pagination; any other parameter must be a search field.
PAGING_PARAMS = frozenset({"limit", "offset"})


class DecisionSearchSerializer(serializers.Serializer):
    """The query of GET /api/v1/decisions: every field optional, all of them ANDed. An
    unknown parameter is an error, not ignored: a misspelt filter would list everything."""

    id = serializers.CharField(required=False, max_length=32, help_text="A decision id.")
    start = serializers.DateTimeField(
        required=False, help_text="Decided at or after this time (ISO 8601)."
    )
    end = serializers.DateTimeField(required=False, help_text="Decided before this time.")
    node = serializers.CharField(required=False, max_length=200)
    model = serializers.CharField(required=False, max_length=200)
    slo = serializers.CharField(required=False, max_length=100)
    # The URL parameter `source`; as a class attribute it shadows Field.source for mypy only.
    source = serializers.CharField(required=False, max_length=100)  # type: ignore[assignment]
    policy = serializers.RegexField(
        r"^[^@\s]+(@[^@\s]+)?$",
        required=False,
        max_length=201,
        help_text="A policy name, or NAME@VERSION.",
        error_messages={"invalid": "A policy name, or NAME@VERSION."},
    )
    arm = serializers.ChoiceField(choices=["active", "canary"], required=False)
    ok = serializers.BooleanField(required=False, allow_null=True, default=None)
    slo_met = serializers.BooleanField(required=False, allow_null=True, default=None)
    order = serializers.ChoiceField(choices=["newest", "oldest"], required=False, default="newest")

    def get_fields(self) -> dict[str, serializers.Field]:
        # The range is `from` and `to` in the URL, Python keywords here.
        fields = super().get_fields()
        fields["from"] = fields.pop("start")
        fields["to"] = fields.pop("end")
        return fields

    def to_internal_value(self, data: Any) -> DecisionQuery:
        unknown = sorted(set(data) - self.fields.keys() - PAGING_PARAMS)
        if unknown:
            known = ", ".join(sorted(self.fields))
            raise serializers.ValidationError(
                {name: [f"Not a search field; the fields are {known}."] for name in unknown}
            )
        raw = {k: data.get(k) for k in self.fields if data.get(k) not in (None, "")}
        values: dict[str, Any] = super().to_internal_value(raw)
        start, end = values.get("from"), values.get("to")
        if start is not None and end is not None and start >= end:
            raise serializers.ValidationError({"from": ["Must be before `to`."]})
        name, _, version = (values.get("policy") or "").partition("@")
        return DecisionQuery(
            decision_id=values.get("id"),
            since=start,
            until=end,
            node=values.get("node"),
            model=values.get("model"),
            slo=values.get("slo"),
            source=values.get("source"),
            policy_name=name or None,
            policy_version=version or None,
            arm=values.get("arm"),
            ok=values.get("ok"),
            slo_met=values.get("slo_met"),
            newest_first=values.get("order", "newest") == "newest",
        )


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
