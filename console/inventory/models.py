"""The fleet inventory. Integrity lives in the database: unique names, foreign keys,
non-negative numbers, and a link never joins a site to itself."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from console.inventory.choices import NodeRole, NodeState, Tier
from optimizer.topology import MAX_SHARE


def _non_negative(field: str, table: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(**{f"{field}__gte": 0}), name=f"{table}_{field}_non_negative"
    )


def _positive(field: str, table: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(**{f"{field}__gt": 0}), name=f"{table}_{field}_positive"
    )


def _share_bounded(table: str) -> models.CheckConstraint:
    """A share is a relative weight up to MAX_SHARE (docs/hardening.md): bounded, so sums of
    shares stay finite for every evaluation's draw."""
    return models.CheckConstraint(condition=Q(share__lte=MAX_SHARE), name=f"{table}_share_bounded")


class FleetSettings(models.Model):
    """Fleet-wide values of the topology file (a single row)."""

    intra_site_rtt_ms = models.FloatField(default=0.5)
    revision = models.PositiveBigIntegerField(
        default=0,
        editable=False,
        help_text="Bumped on every inventory write, so readers can cache the inventory.",
    )

    class Meta:
        verbose_name_plural = "fleet settings"
        constraints = [_non_negative("intra_site_rtt_ms", "fleet")]

    def __str__(self) -> str:
        return "Fleet settings"

    @classmethod
    def load(cls) -> FleetSettings:
        obj, _ = cls.objects.get_or_create(pk=1)
        return obj


class Site(models.Model):
    """A place that holds compute or originates requests."""

    name = models.CharField(max_length=100, unique=True)
    tier = models.CharField(max_length=16, choices=Tier.choices)
    region = models.CharField(max_length=100)
    jurisdiction = models.CharField(max_length=32, help_text="Legal area, e.g. EU or US.")

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(tier__in=Tier.values), name="site_tier_valid")
        ]

    def __str__(self) -> str:
        return self.name


class Link(models.Model):
    """A symmetric network path between two sites. Stored once per pair, with the
    lower site id first; a pair without a link is unreachable."""

    site_a = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="+")
    site_b = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="+")
    rtt_ms = models.FloatField()
    bandwidth_gbps = models.FloatField()
    egress_usd_per_gb = models.FloatField(default=0.0)

    class Meta:
        ordering = ["site_a__name", "site_b__name"]
        constraints = [
            models.UniqueConstraint(fields=["site_a", "site_b"], name="link_unique_pair"),
            # Ordering the pair makes (a, b) and (b, a) the same row, and forbids a == b.
            models.CheckConstraint(condition=Q(site_a__lt=F("site_b")), name="link_ordered_pair"),
            _non_negative("rtt_ms", "link"),
            _positive("bandwidth_gbps", "link"),
            _non_negative("egress_usd_per_gb", "link"),
        ]

    def __str__(self) -> str:
        return f"{self.site_a} <-> {self.site_b}"


class Accelerator(models.Model):
    """A kind of accelerator (one GPU), by memory."""

    name = models.CharField(max_length=100, unique=True)
    memory_gib = models.FloatField()

    class Meta:
        ordering = ["name"]
        constraints = [_positive("memory_gib", "accelerator")]

    def __str__(self) -> str:
        return self.name


class ServedModel(models.Model):
    """A model the fleet serves: its weights' memory and KV-cache bytes per token."""

    name = models.CharField(max_length=200, unique=True)
    memory_gib = models.FloatField()
    kv_bytes_per_token = models.BigIntegerField()

    class Meta:
        ordering = ["name"]
        constraints = [
            _non_negative("memory_gib", "model"),
            _positive("kv_bytes_per_token", "model"),
        ]

    def __str__(self) -> str:
        return self.name


class Profile(models.Model):
    """Serving speed of one model on one accelerator (one GPU)."""

    model = models.ForeignKey(ServedModel, on_delete=models.CASCADE, related_name="profiles")
    accelerator = models.ForeignKey(Accelerator, on_delete=models.CASCADE, related_name="profiles")
    prefill_tokens_per_s = models.FloatField()
    decode_step_ms = models.FloatField()
    decode_step_ms_per_seq = models.FloatField()
    max_batch = models.PositiveIntegerField()

    class Meta:
        ordering = ["model__name", "accelerator__name"]
        constraints = [
            models.UniqueConstraint(fields=["model", "accelerator"], name="profile_unique"),
            _positive("prefill_tokens_per_s", "profile"),
            _positive("decode_step_ms", "profile"),
            _non_negative("decode_step_ms_per_seq", "profile"),
            _positive("max_batch", "profile"),
        ]

    def __str__(self) -> str:
        return f"{self.model} on {self.accelerator}"


class Node(models.Model):
    """One serving endpoint: `gpus` accelerators running the listed models."""

    name = models.CharField(max_length=200, unique=True)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="nodes")
    accelerator = models.ForeignKey(Accelerator, on_delete=models.PROTECT, related_name="nodes")
    gpus = models.PositiveIntegerField(default=1)
    usd_per_hour = models.FloatField()
    served_models = models.ManyToManyField(ServedModel, related_name="nodes")
    role = models.CharField(max_length=16, choices=NodeRole.choices, default=NodeRole.MIXED)
    state = models.CharField(max_length=16, choices=NodeState.choices, default=NodeState.ACTIVE)
    state_reason = models.CharField(max_length=500, blank=True)
    state_changed_at = models.DateTimeField(null=True, blank=True)
    state_changed_by = models.CharField(
        max_length=150, blank=True, help_text="Who made the last state change (an identity)."
    )
    labels = models.JSONField(default=dict, blank=True)
    exporter_urls = models.JSONField(
        default=list, blank=True, help_text="Exporter /metrics URLs scraped on a schedule."
    )
    address = models.CharField(
        max_length=64,
        blank=True,
        help_text="Serving endpoint ip:port a gateway routes this node's requests to.",
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            _positive("gpus", "node"),
            _non_negative("usd_per_hour", "node"),
            models.CheckConstraint(condition=Q(role__in=NodeRole.values), name="node_role_valid"),
            models.CheckConstraint(
                condition=Q(state__in=NodeState.values), name="node_state_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class NodeStateChange(models.Model):
    """Audit trail of operators' node state changes: who drained, cordoned, uncordoned or
    marked a node down, when, from which state, and why."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="state_changes")
    action = models.CharField(max_length=16)
    from_state = models.CharField(max_length=16)
    to_state = models.CharField(max_length=16)
    reason = models.CharField(max_length=500, blank=True)
    actor = models.CharField(
        max_length=150, help_text="A username, `key:NAME` for an API key, or `system`."
    )
    at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.node}: {self.from_state} → {self.to_state} by {self.actor}"


class Slo(models.Model):
    """A service level a request is held to, with optional data residency and cost cap."""

    name = models.CharField(max_length=100, unique=True)
    ttft_p95_ms = models.FloatField()
    e2e_p95_ms = models.FloatField()
    residency = models.CharField(
        max_length=32, blank=True, help_text="Jurisdiction the request must stay in, if any."
    )
    max_usd_per_1k = models.FloatField(null=True, blank=True)
    max_error_rate = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "SLO"
        constraints = [
            _positive("ttft_p95_ms", "slo"),
            _positive("e2e_p95_ms", "slo"),
            _non_negative("max_usd_per_1k", "slo"),
            models.CheckConstraint(
                condition=Q(max_error_rate__isnull=True)
                | Q(max_error_rate__gte=0, max_error_rate__lte=1),
                name="slo_error_rate_fraction",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Source(models.Model):
    """Where requests come from: a site, a share of the traffic and a default SLO."""

    name = models.CharField(max_length=100, unique=True)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="sources")
    share = models.FloatField(default=1.0)
    slo = models.ForeignKey(Slo, on_delete=models.PROTECT, related_name="sources")

    class Meta:
        ordering = ["name"]
        constraints = [_positive("share", "source"), _share_bounded("source")]

    def __str__(self) -> str:
        return self.name


class WorkloadShare(models.Model):
    """Which models a trace's requests ask for, and how often (the topology's workload)."""

    model = models.OneToOneField(ServedModel, on_delete=models.CASCADE, related_name="workload")
    share = models.FloatField()

    class Meta:
        ordering = ["model__name"]
        constraints = [_positive("share", "workload"), _share_bounded("workload")]

    def __str__(self) -> str:
        return f"{self.model}: {self.share}"
