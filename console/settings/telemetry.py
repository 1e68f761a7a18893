"""Telemetry ingest, scraping, storage and SLO breach rules (telemetry/conf.py reads these).
docs/settings.md, "Telemetry and SLOs"."""

from __future__ import annotations

from console.settings.environment import REDIS_URL, VAR_DIR, env

LOCUS_TELEMETRY_STALE_SECONDS: float = env.float("LOCUS_TELEMETRY_STALE_SECONDS", default=30.0)
LOCUS_TELEMETRY_REGISTER_UNKNOWN_NODES: bool = env.bool(
    "LOCUS_TELEMETRY_REGISTER_UNKNOWN_NODES", default=False
)
LOCUS_TELEMETRY_REGISTER_SITE: str = env.str("LOCUS_TELEMETRY_REGISTER_SITE", default="")
LOCUS_TELEMETRY_REGISTER_ACCELERATOR: str = env.str(
    "LOCUS_TELEMETRY_REGISTER_ACCELERATOR", default=""
)
# Latest telemetry per node: Redis when configured, else a SQLite file every process shares.
LOCUS_TELEMETRY_STATE_URL: str = env.str(
    "LOCUS_TELEMETRY_STATE_URL",
    default=REDIS_URL or f"sqlite:///{VAR_DIR / 'telemetry-state.sqlite3'}",
)
LOCUS_TELEMETRY_STATE_PREFIX: str = env.str(
    "LOCUS_TELEMETRY_STATE_PREFIX", default="locus:telemetry"
)
LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS", default=10.0
)
LOCUS_TELEMETRY_SCRAPE_TIMEOUT_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_SCRAPE_TIMEOUT_SECONDS", default=5.0
)
LOCUS_TELEMETRY_SCRAPE_BACKOFF_MAX_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_SCRAPE_BACKOFF_MAX_SECONDS", default=300.0
)
LOCUS_TELEMETRY_RETENTION_DAYS: int = env.int("LOCUS_TELEMETRY_RETENTION_DAYS", default=7)
LOCUS_TELEMETRY_ROLLUP_RETENTION_DAYS: int = env.int(
    "LOCUS_TELEMETRY_ROLLUP_RETENTION_DAYS", default=90
)
LOCUS_TELEMETRY_PARTITION_DAYS_AHEAD: int = env.int(
    "LOCUS_TELEMETRY_PARTITION_DAYS_AHEAD", default=3
)
# The largest ingest body, above the API's 16 MiB (core.DATA_UPLOAD_MAX_MEMORY_SIZE;
# docs/hardening.md, "request bodies").
LOCUS_TELEMETRY_MAX_BODY_BYTES: int = env.int(
    "LOCUS_TELEMETRY_MAX_BODY_BYTES", default=32 * 1024 * 1024
)
# A remote-write body's size once decompressed (its snappy header is checked before any
# decompression; 413 beyond it). docs/hardening.md has the reasoning.
LOCUS_TELEMETRY_MAX_DECOMPRESSED_BYTES: int = env.int(
    "LOCUS_TELEMETRY_MAX_DECOMPRESSED_BYTES", default=16 * 1024 * 1024
)
LOCUS_TELEMETRY_MAX_FUTURE_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_MAX_FUTURE_SECONDS", default=300.0
)
LOCUS_TELEMETRY_INBOX_REDELIVER_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_INBOX_REDELIVER_SECONDS", default=60.0
)
# SLA breaches: burn-rate rules on each SLO's outcomes (telemetry/slo_rules.py). The windows
# are the SRE workbook's for a 30-day budget and scale with the period (`make run`: 1 day).
LOCUS_SLO_PERIOD_DAYS: float = env.float("LOCUS_SLO_PERIOD_DAYS", default=30.0)
LOCUS_SLO_MIN_REQUESTS: int = env.int("LOCUS_SLO_MIN_REQUESTS", default=20)
LOCUS_SLO_EVAL_INTERVAL_SECONDS: float = env.float("LOCUS_SLO_EVAL_INTERVAL_SECONDS", default=30.0)
LOCUS_NODE_LATENCY_WINDOW_SECONDS: int = env.int("LOCUS_NODE_LATENCY_WINDOW_SECONDS", default=300)
