"""Request and response bodies of the exploration probes' API (docs/twin.md, "Exploration
probe")."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.api.fields import StrictFloatField
from console.twin.api.serializers import ProposalDecisionRequestSerializer, StrictIntegerField
from console.twin.choices import ProbeState
from console.twin.models import ExplorationProbe, ProbeTransition
from console.twin.probe_selectors import target_observations
from console.twin.probe_services import DEFAULT_SHARE, MAX_SHARE

# Bounds that keep a probe small and its numbers sane: a budget of at most a million
# requests, a week at most.
MAX_REQUESTS = 1_000_000
MAX_HOURS = 168.0


class ProbeProposalSerializer(ProposalDecisionRequestSerializer):
    """Propose a probe: from a calibration run's under-observed profiles and held values, on
    named nodes, or both (the run's under-observed pairs on those nodes)."""

    calibration_run = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=2**31 - 1,
        help_text="A succeeded calibration run whose report names under-observed profiles "
        "or held values.",
    )
    nodes = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        min_length=1,
        max_length=1000,
        help_text="Inventory nodes to probe (every model each serves, without a run).",
    )
    share = StrictFloatField(
        required=False,
        default=DEFAULT_SHARE,
        help_text=f"The share of decisions it takes, in (0, {MAX_SHARE}]; {DEFAULT_SHARE} "
        "unless given.",
    )
    max_requests = StrictIntegerField(
        required=False,
        default=1000,
        min_value=1,
        max_value=MAX_REQUESTS,
        help_text="Its budget: it completes once it has sent this many.",
    )
    hours = StrictFloatField(
        required=False,
        default=24.0,
        min_value=0.01,
        max_value=MAX_HOURS,
        help_text="Its deadline, counted from its start.",
    )
    min_observations = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=MAX_REQUESTS,
        help_text="It completes early once every target has this many measured requests; "
        "the run's min_samples (or LOCUS_CALIBRATION_MIN_SAMPLES) unless given.",
    )

    def validate_share(self, value: float) -> float:
        if not 0 < value <= MAX_SHARE:
            raise serializers.ValidationError(f"Must be greater than 0 and at most {MAX_SHARE}.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "calibration_run" not in attrs and "nodes" not in attrs:
            raise serializers.ValidationError(
                {"calibration_run": ["Give calibration_run, nodes, or both."]}
            )
        return attrs


class ProbeStepSerializer(ProposalDecisionRequestSerializer):
    """A step of a probe: why, kept in the audit trail."""


class ProbeTransitionSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    class Meta:
        model = ProbeTransition
        fields = ["action", "from_state", "to_state", "actor", "reason", "at"]


class ProbePairSerializer(serializers.Serializer):  # type: ignore[type-arg]
    node = serializers.CharField()
    model = serializers.CharField()


class ProbeHeldValueSerializer(serializers.Serializer):  # type: ignore[type-arg]
    value = serializers.CharField(
        help_text="prefill_tokens_per_s, decode_step_ms or decode_step_ms_per_seq."
    )
    status = serializers.CharField(help_text="Its status: insufficient_data or not_identifiable.")
    reason = serializers.CharField(
        help_text="The report's reason, for a prefill rate held for too few queue-free TTFT "
        "rows (docs/twin.md, step 6); empty otherwise."
    )

    def to_representation(self, instance: dict[str, Any]) -> dict[str, Any]:
        return dict(super().to_representation({"reason": "", **instance}))


class ProbeTargetSerializer(ProbePairSerializer):
    """A target, with why the run's report made it one: a target named by node (or stored
    before held values were targets) has an empty status and no held values."""

    profile_status = serializers.CharField(
        help_text="Its profile's status in the run's report: insufficient_data, "
        "not_identifiable, or fitted while some value was held; empty for a named node."
    )
    held = ProbeHeldValueSerializer(
        many=True, help_text="The values of its profile the run held for want of data."
    )

    def to_representation(self, instance: dict[str, Any]) -> dict[str, Any]:
        return dict(super().to_representation({"profile_status": "", "held": [], **instance}))


class ProbeObservedSerializer(ProbePairSerializer):
    observations = serializers.IntegerField(
        help_text="Measured requests it served since the probe started, whoever sent them."
    )


class ExplorationProbeSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    targets = ProbeTargetSerializer(many=True, read_only=True)
    observed = serializers.SerializerMethodField(
        help_text="While it runs: each target's measured requests since it started."
    )
    transitions = ProbeTransitionSerializer(many=True, read_only=True)

    class Meta:
        model = ExplorationProbe
        fields = [
            "id",
            "state",
            "calibration_run",
            "targets",
            "share",
            "max_requests",
            "duration_s",
            "min_observations",
            "reason",
            "created_by_name",
            "approved_by_name",
            "started_by_name",
            "created_at",
            "started_at",
            "ends_at",
            "finished_at",
            "sent",
            "outcome",
            "observed",
            "transitions",
        ]
        read_only_fields = fields

    def get_observed(self, probe: ExplorationProbe) -> list[dict[str, Any]] | None:
        if probe.state != ProbeState.RUNNING:
            return None
        return [
            {"node": node, "model": model, "observations": n}
            for (node, model), n in target_observations(probe).items()
        ]
