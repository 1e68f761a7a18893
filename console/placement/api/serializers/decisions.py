"""GET /api/v1/decisions: the search's query, and the recorded decisions it answers with."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.placement.api.serializers.receipts import ReceiptSerializer
from console.placement.breach_flags import breaches_around, picked_in_breach
from console.placement.models import DecisionRecord
from console.placement.selectors import DecisionQuery
from optimizer.decide.explain import estimates_against_runner_up


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
