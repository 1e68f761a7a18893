from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.api.fields import StrictBooleanField, StrictFloatField
from console.policies.models import (
    PolicyEvaluation,
    PolicyTransition,
    PolicyVersion,
    ShadowComparison,
    TrainingRun,
)
from console.twin.selectors import calibration_runs


class PolicyTransitionSerializer(serializers.ModelSerializer):
    policy = serializers.CharField(source="version.__str__", read_only=True)

    class Meta:
        model = PolicyTransition
        fields = [
            "id",
            "version",
            "policy",
            "from_state",
            "to_state",
            "actor",
            "reason",
            "canary_share",
            "at",
        ]


class PolicyEvaluationSerializer(serializers.ModelSerializer):
    class Meta:
        model = PolicyEvaluation
        fields = [
            "id",
            "version",
            "baseline",
            "trace",
            "loads",
            "seeds",
            "recorded_hours",
            "calibration_run",
            "status",
            "progress",
            "report",
            "error",
            "created_at",
            "finished_at",
        ]


class ShadowComparisonSerializer(serializers.ModelSerializer):
    agreement = serializers.SerializerMethodField()
    mean_predicted_ttft_delta_ms = serializers.SerializerMethodField()

    class Meta:
        model = ShadowComparison
        fields = [
            "compared",
            "agreed",
            "agreement",
            "mean_predicted_ttft_delta_ms",
            "predicted_cost_delta_usd_sum",
            "updated_at",
        ]

    def get_agreement(self, obj: ShadowComparison) -> float | None:
        return obj.agreed / obj.compared if obj.compared else None

    def get_mean_predicted_ttft_delta_ms(self, obj: ShadowComparison) -> float | None:
        return obj.predicted_ttft_delta_ms_sum / obj.compared if obj.compared else None


class PolicyVersionSerializer(serializers.ModelSerializer):
    registered_by = serializers.SerializerMethodField(
        help_text="A username, `key:NAME` for an API key, or null when the system registered it."
    )
    approved_by = serializers.SerializerMethodField(
        help_text="A username or `key:NAME`; null until approved."
    )
    registered_by_person: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="The person behind the registrant (a key's owner); null for the system and "
        "keys without a person. Approval needs another person.",
    )
    approved_by_person: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="The person behind the approver. When no person registered the version, "
        "another person than this one must canary or promote it.",
    )
    latest_evaluation = serializers.SerializerMethodField()
    shadow = serializers.SerializerMethodField()

    class Meta:
        model = PolicyVersion
        fields = [
            "id",
            "name",
            "version",
            "kind",
            "heuristic",
            "artifact_dir",
            "metadata",
            "artifact_sha256",
            "state",
            "canary_share",
            "registered_by",
            "registered_by_person",
            "registered_at",
            "approved_by",
            "approved_by_person",
            "approved_at",
            "state_changed_at",
            "latest_evaluation",
            "shadow",
        ]

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_registered_by(self, obj: PolicyVersion) -> str | None:
        if obj.registered_by_name:
            return obj.registered_by_name
        return obj.registered_by.get_username() if obj.registered_by is not None else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_approved_by(self, obj: PolicyVersion) -> str | None:
        if obj.approved_by_name:
            return obj.approved_by_name
        return obj.approved_by.get_username() if obj.approved_by is not None else None

    def get_latest_evaluation(self, obj: PolicyVersion) -> dict[str, Any] | None:
        evaluation = obj.evaluations.first()
        return PolicyEvaluationSerializer(evaluation).data if evaluation else None

    def get_shadow(self, obj: PolicyVersion) -> dict[str, Any] | None:
        stats = ShadowComparison.objects.filter(version=obj).first()
        return ShadowComparisonSerializer(stats).data if stats else None


class PolicyRegisterSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    version = serializers.CharField(max_length=100)
    heuristic = serializers.CharField(max_length=50, required=False, allow_blank=True, default="")
    artifact_dir = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default=""
    )


class TransitionRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(
        max_length=1000, help_text="Why; required and kept in the audit trail."
    )
    canary_share = StrictFloatField(
        required=False,
        min_value=0.0001,
        max_value=1.0,
        help_text="For canary only: the share of live traffic it serves, in (0, 1].",
    )


class TwinInputsMixin(serializers.Serializer):
    """The twin's inputs a training run or an evaluation may take (docs/twin.md): the last N
    hours of recorded traffic as the trace, a succeeded calibration run's fleet as topology."""

    recorded_hours = StrictFloatField(
        required=False, min_value=0.01, help_text="Replay the traffic of the last N hours."
    )
    calibration_run = serializers.IntegerField(
        required=False, min_value=1, help_text="Run on this calibration run's fitted fleet."
    )

    def validate_recorded_hours(self, value: float) -> float:
        if value > settings.LOCUS_OBSERVATIONS_MAX_HOURS:
            raise serializers.ValidationError(
                f"At most {settings.LOCUS_OBSERVATIONS_MAX_HOURS:g} hours."
            )
        return value

    def validate_calibration_run(self, value: int) -> int:
        if not calibration_runs().filter(pk=value, status="succeeded").exists():
            raise serializers.ValidationError("No succeeded calibration run with this id.")
        return value


class EvaluationRequestSerializer(TwinInputsMixin):
    trace = serializers.CharField(
        required=False,
        help_text="A trace file name in the traces "
        "directory (LOCUS_TRACES_DIR); defaults to the configured one.",
    )
    loads = serializers.ListField(
        child=serializers.FloatField(min_value=0.01, max_value=100),
        required=False,
        min_length=1,
        max_length=6,
    )
    seeds = serializers.ListField(
        child=serializers.IntegerField(min_value=0), required=False, min_length=1, max_length=5
    )


class TrainingRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrainingRun
        fields = [
            "id",
            "config",
            "status",
            "progress",
            "log_tail",
            "metrics",
            "below_baseline",
            "artifact_dir",
            "report",
            "error",
            "version",
            "created_at",
            "finished_at",
        ]


class TrainingRunRequestSerializer(TwinInputsMixin):
    """A run's budget is never implied: `{}` once started a 500,000-step run that holds the
    jobs worker for many minutes (issue 13). Give `timesteps`, or `confirm: true` to accept
    the server's default (LOCUS_TRAINING_TIMESTEPS)."""

    trace = serializers.CharField(
        required=False,
        max_length=255,
        help_text="A trace file name in the traces directory; defaults to the fleet's "
        "configured trace (LOCUS_FLEET_TRACE).",
    )
    timesteps = serializers.IntegerField(
        required=False,
        min_value=256,
        max_value=5_000_000,
        help_text="PPO steps. Required unless `confirm` is true.",
    )
    seed = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1, default=0)
    init = serializers.ChoiceField(
        choices=["generalist", "imitation"],
        required=False,
        help_text="Start from the shipped generalist policy (fine-tuning, the default) or from "
        "imitation of the SLO-aware teacher.",
    )
    register_below_baseline = StrictBooleanField(
        default=False,
        help_text="Register the result as a candidate even when it validates below the best "
        "heuristic (otherwise such a run says so and registers nothing).",
    )
    confirm = StrictBooleanField(
        required=False,
        default=False,
        write_only=True,
        help_text="True to run the server's default budget (LOCUS_TRAINING_TIMESTEPS) when "
        "`timesteps` is not given.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        confirmed = attrs.pop("confirm", False)
        if "timesteps" not in attrs and not confirmed:
            default = settings.LOCUS_TRAINING_TIMESTEPS
            raise serializers.ValidationError(
                {
                    "timesteps": [
                        f'Give a budget, or send "confirm": true to run the default of '
                        f"{default:,} steps."
                    ]
                }
            )
        return attrs
