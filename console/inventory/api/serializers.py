"""Inventory resources as JSON; related entries are referred to by name, as in topology files."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from console.inventory.models import (
    Accelerator,
    Link,
    Node,
    NodeStateChange,
    Profile,
    ServedModel,
    Site,
    Slo,
    Source,
    WorkloadShare,
)
from console.inventory.names import name_problem
from optimizer.topology import GIB, MAX_GPUS, MAX_MEMORY_GIB, MAX_SHARE, parse_address


def _by_name(queryset: Any, **kwargs: Any) -> serializers.SlugRelatedField:
    return serializers.SlugRelatedField(slug_field="name", queryset=queryset, **kwargs)


class _NamedSerializer(serializers.ModelSerializer):
    """An entry with a name: the name follows the inventory's one name rule (names.py)."""

    def validate_name(self, value: str) -> str:
        problem = name_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class SiteSerializer(_NamedSerializer):
    class Meta:
        model = Site
        fields = ["id", "name", "tier", "region", "jurisdiction"]


class LinkSerializer(serializers.ModelSerializer):
    a = _by_name(Site.objects.all(), source="site_a")
    b = _by_name(Site.objects.all(), source="site_b")

    class Meta:
        model = Link
        fields = ["id", "a", "b", "rtt_ms", "bandwidth_gbps", "egress_usd_per_gb"]
        validators: list[Any] = []  # the pair is checked in validate(), in either order
        extra_kwargs = {
            "rtt_ms": {"min_value": 0},
            "bandwidth_gbps": {"min_value": 0},
            "egress_usd_per_gb": {"min_value": 0},
        }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        a = attrs.get("site_a", getattr(self.instance, "site_a", None))
        b = attrs.get("site_b", getattr(self.instance, "site_b", None))
        if a is not None and b is not None:
            if a.pk == b.pk:
                raise serializers.ValidationError({"b": ["A link cannot join a site to itself."]})
            if a.pk > b.pk:
                attrs["site_a"], attrs["site_b"] = b, a
            clash = Link.objects.filter(site_a=min(a.pk, b.pk), site_b=max(a.pk, b.pk))
            if self.instance is not None:
                clash = clash.exclude(pk=self.instance.pk)
            if clash.exists():
                raise serializers.ValidationError(
                    {"b": [f"Sites {a.name} and {b.name} are already linked."]}
                )
        if attrs.get("bandwidth_gbps") == 0:
            raise serializers.ValidationError({"bandwidth_gbps": ["Must be greater than 0."]})
        return attrs


class AcceleratorSerializer(_NamedSerializer):
    class Meta:
        model = Accelerator
        fields = ["id", "name", "memory_gib"]
        extra_kwargs = {"memory_gib": {"min_value": 0.001, "max_value": MAX_MEMORY_GIB}}


class ServedModelSerializer(_NamedSerializer):
    class Meta:
        model = ServedModel
        fields = ["id", "name", "memory_gib", "kv_bytes_per_token"]
        extra_kwargs = {
            "memory_gib": {"min_value": 0, "max_value": MAX_MEMORY_GIB},
            "kv_bytes_per_token": {"min_value": 1},
        }


class ProfileSerializer(serializers.ModelSerializer):
    model = _by_name(ServedModel.objects.all())
    accelerator = _by_name(Accelerator.objects.all())

    class Meta:
        model = Profile
        fields = [
            "id",
            "model",
            "accelerator",
            "prefill_tokens_per_s",
            "decode_step_ms",
            "decode_step_ms_per_seq",
            "max_batch",
        ]
        extra_kwargs = {
            "prefill_tokens_per_s": {"min_value": 0.001},
            "decode_step_ms": {"min_value": 0.001},
            "decode_step_ms_per_seq": {"min_value": 0},
            "max_batch": {"min_value": 1},
        }


class NodeSerializer(_NamedSerializer):
    site = _by_name(Site.objects.all())
    tier = serializers.CharField(source="site.tier", read_only=True)
    accelerator = _by_name(Accelerator.objects.all())
    models = _by_name(ServedModel.objects.all(), many=True, source="served_models")
    kv_capacity_gib = serializers.SerializerMethodField()

    class Meta:
        model = Node
        fields = [
            "id",
            "name",
            "site",
            "tier",
            "accelerator",
            "gpus",
            "usd_per_hour",
            "models",
            "role",
            "state",
            "state_reason",
            "state_changed_at",
            "state_changed_by",
            "labels",
            "exporter_urls",
            "address",
            "kv_capacity_gib",
        ]
        read_only_fields = ["state", "state_reason", "state_changed_at", "state_changed_by"]
        extra_kwargs = {
            "gpus": {"min_value": 1, "max_value": MAX_GPUS},
            "usd_per_hour": {"min_value": 0},
        }

    def get_kv_capacity_gib(self, node: Node) -> float:
        weights = sum(m.memory_gib for m in node.served_models.all())
        return round(node.gpus * node.accelerator.memory_gib - weights, 3)

    def validate_exporter_urls(self, value: Any) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(u, str) for u in value):
            raise serializers.ValidationError("Must be a list of URLs.")
        url = serializers.URLField()
        return [url.run_validation(u) for u in value]

    def validate_address(self, value: str) -> str:
        if not value:
            return ""
        try:
            return parse_address(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc

    def validate_labels(self, value: Any) -> dict[str, str]:
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise serializers.ValidationError("Must be an object of string keys and values.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        accelerator = attrs.get("accelerator", getattr(self.instance, "accelerator", None))
        gpus = attrs.get("gpus", getattr(self.instance, "gpus", 1))
        served = attrs.get("served_models")
        if served is None and self.instance is not None:
            served = list(self.instance.served_models.all())
        if accelerator is None or served is None:
            return attrs
        if not served:
            raise serializers.ValidationError({"models": ["A node serves at least one model."]})
        missing = [
            m.name
            for m in served
            if not Profile.objects.filter(model=m, accelerator=accelerator).exists()
        ]
        if missing:
            raise serializers.ValidationError(
                {"models": [f"No profile for {name} on {accelerator.name}." for name in missing]}
            )
        weights = sum(m.memory_gib for m in served)
        if (gpus * accelerator.memory_gib - weights) * GIB <= 0:
            raise serializers.ValidationError(
                {
                    "models": [
                        f"The models need {weights:g} GiB but the node has "
                        f"{gpus * accelerator.memory_gib:g} GiB."
                    ]
                }
            )
        return attrs


class NodeActionSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=500,
        default="",
        help_text="Why; required to drain or cordon.",
    )


class NodeStateChangeSerializer(serializers.ModelSerializer):
    class Meta:
        model = NodeStateChange
        fields = ["action", "from_state", "to_state", "reason", "actor", "at"]


class SloSerializer(_NamedSerializer):
    class Meta:
        model = Slo
        fields = [
            "id",
            "name",
            "ttft_p95_ms",
            "e2e_p95_ms",
            "residency",
            "max_usd_per_1k",
            "max_error_rate",
        ]
        extra_kwargs = {
            "ttft_p95_ms": {"min_value": 0.001},
            "e2e_p95_ms": {"min_value": 0.001},
            "max_usd_per_1k": {"min_value": 0},
            "max_error_rate": {"min_value": 0, "max_value": 1},
        }


class SourceSerializer(_NamedSerializer):
    site = _by_name(Site.objects.all())
    slo = _by_name(Slo.objects.all())

    class Meta:
        model = Source
        fields = ["id", "name", "site", "share", "slo"]
        extra_kwargs = {"share": {"min_value": 0.000001, "max_value": MAX_SHARE}}


class WorkloadShareSerializer(serializers.ModelSerializer):
    # Declaring the field drops the validator DRF derives from the one-to-one key: restore it,
    # so a second share for a model is a field error and not an IntegrityError.
    model = _by_name(
        ServedModel.objects.all(),
        validators=[
            UniqueValidator(
                queryset=WorkloadShare.objects.all(), message="This model already has a share."
            )
        ],
    )

    class Meta:
        model = WorkloadShare
        fields = ["id", "model", "share"]
        extra_kwargs = {"share": {"min_value": 0.000001, "max_value": MAX_SHARE}}
