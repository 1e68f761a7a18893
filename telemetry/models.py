"""Telemetry storage: the ingest inbox, series and their readings, rollups and SLA breaches.

Readings are narrow rows (series id, time, value) keyed by series, the layout TimescaleDB's
Promscale and Prometheus' own TSDB use: labels are stored once per series, not once per value.
On PostgreSQL `telemetry_reading` is a table partitioned by day (see migration 0001 and
`storage.partitions`); on SQLite it is a plain table with the same columns.
"""

from __future__ import annotations

from django.db import models


class BatchKind(models.TextChoices):
    JSON = "json", "JSON samples"
    PROMETHEUS = "prometheus", "Prometheus text exposition"
    REMOTE_WRITE = "remote_write", "Prometheus remote-write 1.0"


class TelemetryBatch(models.Model):
    """One accepted push, stored raw in a single INSERT before the caller gets 202.

    The row is the durable hand-off between the API and the ingest worker: the worker deletes
    it in the same transaction that writes its readings, so a batch is stored exactly once
    however often its task is delivered. Rows still present after a while are re-enqueued by a
    beat task (a lost broker message or a killed worker loses nothing).
    """

    kind = models.CharField(max_length=16, choices=BatchKind.choices)
    node = models.CharField(
        max_length=200, blank=True, help_text="Node the body belongs to (Prometheus text only)."
    )
    payload = models.BinaryField(help_text="The request body as received (validated).")
    received_at = models.DateTimeField()
    enqueued_at = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name = "telemetry batch"
        verbose_name_plural = "telemetry batches"
        indexes = [models.Index(fields=["enqueued_at"], name="telemetry_batch_enqueued")]

    def __str__(self) -> str:
        return f"{self.kind} batch {self.pk}"


class Series(models.Model):
    """One time series: a node, a metric name and a label set (without the node labels).

    Canonical node fields (queue_depth, kv_usage, ...) are series with empty labels; exporter
    series keep their own names and labels, mapped or not.
    """

    node = models.CharField(max_length=200)
    metric = models.CharField(max_length=200)
    labels = models.JSONField(default=dict)
    labels_hash = models.BigIntegerField(help_text="64-bit hash of the sorted labels.")

    class Meta:
        verbose_name_plural = "series"
        constraints = [
            models.UniqueConstraint(
                fields=["node", "metric", "labels_hash"], name="telemetry_series_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.node} {self.metric}{self.labels or ''}"


class Reading(models.Model):
    """One value of one series at one time. The key (series, ts) makes rewrites idempotent."""

    pk = models.CompositePrimaryKey("series_id", "ts")
    # No database foreign key: a per-row constraint check would halve COPY throughput, and
    # series are never deleted while readings refer to them.
    series = models.ForeignKey(
        Series, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    ts = models.DateTimeField()
    value = models.FloatField()

    def __str__(self) -> str:
        return f"{self.series_id}@{self.ts}={self.value}"


class ReadingRollup(models.Model):
    """One minute of one series: count, sum, min and max (the average is sum / count)."""

    pk = models.CompositePrimaryKey("series_id", "bucket")
    series = models.ForeignKey(
        Series, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    bucket = models.DateTimeField()
    count = models.IntegerField()
    sum = models.FloatField()
    min = models.FloatField()
    max = models.FloatField()

    def __str__(self) -> str:
        return f"{self.series_id}@{self.bucket}"


class BreachStatus(models.TextChoices):
    OPEN = "open", "Open"
    RESOLVED = "resolved", "Resolved"


class BreachMetric(models.TextChoices):
    """The SLI a breach is about (telemetry/slo_rules.py); the p95 ones are from before
    burn-rate rules (issue 28) and no longer opened."""

    WITHIN_TARGETS = "within_targets", "requests within targets"
    ERROR_RATE = "error_rate", "error rate"
    TTFT_P95 = "ttft_p95_ms", "p95 time to first token"
    E2E_P95 = "e2e_p95_ms", "p95 end-to-end latency"


class BreachSeverity(models.TextChoices):
    PAGE = "page", "page"
    TICKET = "ticket", "ticket"


class SlaBreach(models.Model):
    """A period in which one SLO spent its error budget faster than a burn-rate rule allows.

    Opened once the rule (long and short window over the burn-rate factor) has held for its
    hold time, resolved once it has not held for its clear time; holding again in between
    extends the breach (telemetry/slo_rules.py). The breach is the SLO's, judged on all its
    requests; its `burning` rows name the (model, node) pairs that served them and burned the
    budget at least as fast as the rule. `model` and `node` are empty for such breaches (they
    name the window of breaches from before burn-rate rules). Names rather than foreign keys:
    a breach outlives renamed or removed SLOs and nodes.
    """

    slo = models.CharField(max_length=100)
    model = models.CharField(max_length=200, blank=True)
    node = models.CharField(max_length=200, blank=True)
    metric = models.CharField(max_length=16, choices=BreachMetric.choices)
    severity = models.CharField(
        max_length=8,
        choices=BreachSeverity.choices,
        blank=True,
        help_text="The rule's level; empty for breaches from before burn-rate rules.",
    )
    status = models.CharField(max_length=16, choices=BreachStatus.choices)
    objective = models.FloatField(
        null=True, blank=True, help_text="Share of requests that must be good (the SLI's)."
    )
    threshold = models.FloatField(
        help_text="The burn rate the rule needs (before burn-rate rules: the SLO's target)."
    )
    observed = models.FloatField(
        help_text="The long window's burn rate when the breach opened (before burn-rate "
        "rules: the window's p95 or error rate)."
    )
    worst = models.FloatField(help_text="The highest value seen while open.")
    samples = models.PositiveIntegerField(help_text="Requests in the long window at opening.")
    long_window_s = models.FloatField(null=True, blank=True)
    short_window_s = models.FloatField(null=True, blank=True)
    opened_at = models.DateTimeField()
    last_firing_at = models.DateTimeField(
        null=True, blank=True, help_text="The last evaluation at which the rule held."
    )
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "SLA breach"
        verbose_name_plural = "SLA breaches"
        ordering = ["-opened_at"]
        indexes = [
            models.Index(fields=["status", "opened_at"], name="telemetry_breach_status"),
            models.Index(fields=["node", "opened_at"], name="telemetry_breach_node"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["slo", "model", "node", "metric", "severity"],
                condition=models.Q(status="open"),
                name="telemetry_breach_one_open",
            ),
            # Never resolved before opened, whichever clock or process resolves it.
            models.CheckConstraint(
                condition=models.Q(status="open", resolved_at__isnull=True)
                | models.Q(status="resolved", resolved_at__gte=models.F("opened_at")),
                name="telemetry_breach_resolved_after_opened",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.slo} {self.metric} {self.severity} {self.status}"


class BreachNode(models.Model):
    """A (model, node) pair that spent a breach's SLO budget at least as fast as its rule,
    over the rule's long window at the last evaluation that held. The SLO's burn rate is the
    requests-weighted mean of its pairs', so an open breach has at least one."""

    breach = models.ForeignKey(SlaBreach, on_delete=models.CASCADE, related_name="burning")
    node = models.CharField(max_length=200)
    site = models.CharField(max_length=100, blank=True)
    model = models.CharField(max_length=200)
    requests = models.PositiveIntegerField(help_text="The SLO's requests it served.")
    bad = models.PositiveIntegerField(help_text="Those that were bad for the breach's SLI.")
    burn_rate = models.FloatField()

    class Meta:
        ordering = ["-bad", "node", "model"]
        indexes = [models.Index(fields=["node"], name="telemetry_breachnode_node")]
        constraints = [
            models.UniqueConstraint(
                fields=["breach", "model", "node"], name="telemetry_breachnode_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.node} ({self.model}) in breach {self.breach_id}"
