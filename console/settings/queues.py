"""Celery: the broker, how tasks are acknowledged and routed to their queues, and the beat
schedule of every periodic task. docs/settings.md, "Databases and brokers"; docs/operations.md,
"Workers and queues"."""

from __future__ import annotations

from console.settings.environment import REDIS_URL, VAR_DIR, env
from console.settings.telemetry import (
    LOCUS_SLO_EVAL_INTERVAL_SECONDS,
    LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS,
)

# Celery: Redis when configured, otherwise kombu's filesystem transport, a broker that needs no
# server and works across processes (the web process enqueues, the worker consumes).
CELERY_BROKER_URL: str = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
if CELERY_BROKER_URL == "filesystem://":
    # `filesystem://` is served by console/broker.py, not kombu's own transport, which can
    # hand a consumer a half-written message (the Celery app installs it).
    _broker_dir = VAR_DIR / "celery-broker"
    _broker_dir.mkdir(exist_ok=True)
    (VAR_DIR / "celery-processed").mkdir(exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "processed_folder": str(VAR_DIR / "celery-processed"),
        "control_folder": str(VAR_DIR / "celery-control"),
        "store_processed": False,
        # kombu's virtual transports poll; with late acks and a prefetch of one, the default
        # 1 s interval caps a worker near one task a second, too slow for scrapes.
        "polling_interval": 0.05,
    }
CELERY_TASK_ALWAYS_EAGER: bool = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message to be redelivered
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A worker told to stop coldly (SIGQUIT, a second Ctrl-C) gives its running task this long,
# then cancels it; late acks make it redelivered on the next start (Celery 5.5 "soft
# shutdown"). SIGTERM makes a warm shutdown instead, and long jobs requeue themselves at
# their next step (console/worker_stop.py; docs/operations.md, "Stopping a worker").
CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT: float = env.float(
    "CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT", default=10.0
)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# Telemetry and heavy jobs get their own queues and workers, so a training run can never
# starve ingest (console/queues.py; docs/operations.md "Workers and queues").
LOCUS_TELEMETRY_QUEUE = "telemetry"
LOCUS_JOBS_QUEUE = "jobs"
CELERY_TASK_ROUTES = ("console.queues.route_task",)

# Every periodic task in one place, since one beat process runs them all. The telemetry
# intervals are settings of their own (telemetry.py); the canary watchdog judges rollouts
# (console/policies/canary.py).
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "telemetry-scrape": {
        "task": "telemetry.scrape_all",
        "schedule": LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS,
    },
    "telemetry-freshness": {"task": "telemetry.check_freshness", "schedule": 5.0},
    "telemetry-redeliver": {"task": "telemetry.redeliver_inbox", "schedule": 30.0},
    "telemetry-slo-breaches": {
        "task": "telemetry.evaluate_slos",
        "schedule": LOCUS_SLO_EVAL_INTERVAL_SECONDS,
    },
    "telemetry-rollup": {"task": "telemetry.rollup", "schedule": 60.0},
    "telemetry-partitions": {"task": "telemetry.maintain_partitions", "schedule": 3600.0},
    "telemetry-retention": {"task": "telemetry.retention", "schedule": 3600.0},
    "policies-canary-watchdog": {
        "task": "console.policies.tasks.canary_watchdog",
        "schedule": 30.0,
    },
    # Ends an exploration probe once it sent its budget (console/twin/probe_services.py).
    "twin-probe-check": {"task": "console.twin.tasks.check_probe", "schedule": 10.0},
}
