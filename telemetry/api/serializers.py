from __future__ import annotations

from rest_framework import serializers

from telemetry.models import BreachNode, SlaBreach


class AcceptedSerializer(serializers.Serializer):
    batch_id = serializers.IntegerField(
        allow_null=True, help_text="Null when nothing in the request was for a known node."
    )
    samples = serializers.IntegerField(help_text="Samples (node and time pairs) in the batch.")
    values = serializers.IntegerField(help_text="Metric values in the batch.")
    skipped_series = serializers.IntegerField(
        help_text="Remote-write series not stored: no known node matched their labels."
    )
    unknown_nodes = serializers.ListField(
        child=serializers.CharField(), help_text="The first few instance names skipped."
    )


class SampleSerializer(serializers.Serializer):
    """One sample of POST /telemetry/samples (documentation; validation is in parsing.py)."""

    node = serializers.CharField()
    ts = serializers.DateTimeField(help_text="RFC 3339, with a UTC offset.")
    metrics = serializers.DictField(child=serializers.FloatField())


class SamplesSerializer(serializers.Serializer):
    samples = SampleSerializer(many=True)


class SeriesQuerySerializer(serializers.Serializer):
    metric = serializers.CharField(required=False, help_text="Omit to list the node's metrics.")
    start = serializers.DateTimeField(required=False, help_text="Default: an hour before `to`.")
    end = serializers.DateTimeField(required=False, help_text="Default: now.")
    step = serializers.FloatField(required=False, min_value=1.0, help_text="Seconds.")

    def to_internal_value(self, data: object) -> dict[str, object]:
        # `from` and `to` are Python keywords; accept them under their URL names.
        if hasattr(data, "get"):
            data = {
                "metric": data.get("metric"),
                "start": data.get("from"),
                "end": data.get("to"),
                "step": data.get("step"),
            }
            data = {k: v for k, v in data.items() if v not in (None, "")}
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            # Errors name the parameters the caller sent.
            url_names = {"start": "from", "end": "to"}
            detail = exc.detail if isinstance(exc.detail, dict) else {}
            raise serializers.ValidationError(
                {url_names.get(k, k): v for k, v in detail.items()} or exc.detail
            ) from None


class SeriesSerializer(serializers.Serializer):
    labels = serializers.DictField(child=serializers.CharField())
    points = serializers.ListField(child=serializers.ListField(), help_text="[[time, value]]")


class BreachNodeSerializer(serializers.ModelSerializer):
    class Meta:
        model = BreachNode
        fields = ["node", "site", "model", "requests", "bad", "burn_rate"]


class BreachSerializer(serializers.ModelSerializer):
    nodes = BreachNodeSerializer(
        source="burning",
        many=True,
        read_only=True,
        help_text="The (model, node) pairs that spent the SLO's budget at least as fast as the "
        "rule over its long window, most bad requests first.",
    )

    class Meta:
        model = SlaBreach
        fields = [
            "id",
            "status",
            "severity",
            "slo",
            "metric",
            "objective",
            "threshold",
            "observed",
            "worst",
            "samples",
            "long_window_s",
            "short_window_s",
            "nodes",
            "model",
            "node",
            "opened_at",
            "last_firing_at",
            "resolved_at",
        ]


class LatencyBucketSerializer(serializers.Serializer):
    quantile = serializers.FloatField()
    bucket_s = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="[lower, upper] seconds of the exporter bucket holding the quantile; upper "
        "null for the +Inf bucket.",
    )
    requests = serializers.IntegerField(help_text="Observations in the window.")
    text = serializers.CharField(help_text='E.g. "p95 in 5–7.5 s".')


class NodeLatencySerializer(serializers.Serializer):
    node = serializers.CharField()
    window_s = serializers.IntegerField()
    basis = serializers.CharField(help_text="What the figures come from: exporter histograms.")
    ttft = LatencyBucketSerializer(allow_null=True)
    e2e = LatencyBucketSerializer(allow_null=True)
