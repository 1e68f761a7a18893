"""Typed access to the LOCUS_TELEMETRY_* / LOCUS_SLO_* settings (defaults in
console/settings/telemetry.py).

Read at call time, not import time, so tests can override them with the `settings` fixture.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings


def _get(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def stale_seconds() -> float:
    return float(_get("LOCUS_TELEMETRY_STALE_SECONDS", 30.0))


def register_unknown_nodes() -> bool:
    return bool(_get("LOCUS_TELEMETRY_REGISTER_UNKNOWN_NODES", False))


def register_site() -> str:
    return str(_get("LOCUS_TELEMETRY_REGISTER_SITE", ""))


def register_accelerator() -> str:
    return str(_get("LOCUS_TELEMETRY_REGISTER_ACCELERATOR", ""))


def state_url() -> str:
    """Where the latest-state cache lives: a redis:// URL, or "memory://" (in process)."""
    return str(_get("LOCUS_TELEMETRY_STATE_URL", "") or "memory://")


def state_prefix() -> str:
    return str(_get("LOCUS_TELEMETRY_STATE_PREFIX", "locus:telemetry"))


def scrape_timeout_seconds() -> float:
    return float(_get("LOCUS_TELEMETRY_SCRAPE_TIMEOUT_SECONDS", 5.0))


def scrape_backoff_max_seconds() -> float:
    return float(_get("LOCUS_TELEMETRY_SCRAPE_BACKOFF_MAX_SECONDS", 300.0))


def scrape_interval_seconds() -> float:
    return float(_get("LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS", 10.0))


def retention_days() -> int:
    return int(_get("LOCUS_TELEMETRY_RETENTION_DAYS", 7))


def rollup_retention_days() -> int:
    return int(_get("LOCUS_TELEMETRY_ROLLUP_RETENTION_DAYS", 90))


def partition_days_ahead() -> int:
    return int(_get("LOCUS_TELEMETRY_PARTITION_DAYS_AHEAD", 3))


def max_body_bytes() -> int:
    return int(_get("LOCUS_TELEMETRY_MAX_BODY_BYTES", 32 * 1024 * 1024))


def max_decompressed_bytes() -> int:
    return int(_get("LOCUS_TELEMETRY_MAX_DECOMPRESSED_BYTES", 16 * 1024 * 1024))


def max_future_seconds() -> float:
    return float(_get("LOCUS_TELEMETRY_MAX_FUTURE_SECONDS", 300.0))


def inbox_redeliver_seconds() -> float:
    return float(_get("LOCUS_TELEMETRY_INBOX_REDELIVER_SECONDS", 60.0))


def slo_period_days() -> float:
    """The error-budget period; burn-rate windows scale with it (telemetry/slo_rules.py)."""
    return float(_get("LOCUS_SLO_PERIOD_DAYS", 30.0))


def slo_min_requests() -> int:
    """Requests a rule's long window needs before it can hold: with fewer, one slow request
    is a large share (the workbook's low-traffic caveat)."""
    return int(_get("LOCUS_SLO_MIN_REQUESTS", 20))


def slo_eval_interval_seconds() -> float:
    """How often the burn-rate rules are evaluated (the beat task; and, at most this often
    per process and SLO, after an outcome)."""
    return float(_get("LOCUS_SLO_EVAL_INTERVAL_SECONDS", 30.0))


def node_latency_window_seconds() -> int:
    """The window of exporter histograms a node's latency health is read over."""
    return int(_get("LOCUS_NODE_LATENCY_WINDOW_SECONDS", 300))
