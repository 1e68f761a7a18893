"""Celery queues: telemetry work and heavy jobs never share a worker slot.

Issue 13, finding 4: a training run and one evaluation held both slots of the one worker, and
telemetry froze fleet-wide for minutes. Tasks are therefore routed by name (settings
`CELERY_TASK_ROUTES` names `route_task`): every `telemetry.*` task (ingest, scrapes,
freshness and inbox sweeps, rollups; SLO windows and breach checks run inside ingest), the
canary watchdog and the exploration probe's check go to `LOCUS_TELEMETRY_QUEUE`; training runs
and evaluations to `LOCUS_JOBS_QUEUE`. Each queue gets its own worker (Procfile,
docker/compose.yaml, docs/operations.md). Anything else stays on Celery's default queue,
which the telemetry worker also consumes.

`queue_backlog()` measures how many messages wait in each queue, cheaply enough for every
`/metrics` scrape: one LLEN per queue on Redis, one directory listing on the embedded
filesystem broker.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from django.conf import settings
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

DEFAULT_QUEUE = "celery"  # Celery's task_default_queue, left as it is
# The canary watchdog compares live outcomes and rolls a bad canary back, and the probe check
# ends an exploration probe that has sent its budget: both must run on time even while the
# jobs worker is busy for an hour.
TELEMETRY_TASKS = frozenset(
    {"console.policies.tasks.canary_watchdog", "console.twin.tasks.check_probe"}
)
# A replay job fanned out by an evaluation or a training run (console/policies/fanout.py),
# and a twin calibration, replay traces as their parents do: left on the default queue, they
# ran on the telemetry worker and held its one slot (tests/console/test_queues.py).
JOB_TASKS = frozenset(
    {
        "console.policies.tasks.run_training",
        "console.policies.tasks.run_evaluation",
        "console.policies.fanout.run_replay_job",
        "console.twin.tasks.run_calibration",
    }
)


def queue_for(task_name: str) -> str:
    """The queue a task goes to (names from settings, so tests may isolate their own)."""
    if task_name.startswith("telemetry.") or task_name in TELEMETRY_TASKS:
        return str(settings.LOCUS_TELEMETRY_QUEUE)
    if task_name in JOB_TASKS:
        return str(settings.LOCUS_JOBS_QUEUE)
    return DEFAULT_QUEUE


def route_task(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **kw: Any) -> Any:
    """A Celery router (https://docs.celeryq.dev/en/stable/userguide/routing.html#routers)."""
    return {"queue": queue_for(name)}


def queue_names() -> list[str]:
    return [str(settings.LOCUS_TELEMETRY_QUEUE), str(settings.LOCUS_JOBS_QUEUE), DEFAULT_QUEUE]


def queue_backlog() -> dict[str, int]:
    """Messages waiting per queue (not those a worker holds unacknowledged); {} when the
    broker cannot be asked (the caller then exports nothing rather than a false zero)."""
    url = str(settings.CELERY_BROKER_URL)
    try:
        if url.startswith("filesystem://"):
            return _filesystem_backlog()
        if url.startswith(("redis://", "rediss://", "unix://")):
            return _redis_backlog(url)
    except Exception as exc:  # a dead broker must not fail the /metrics scrape
        logger.debug("queue backlog unavailable: %s", exc)
    return {}


def _filesystem_backlog() -> dict[str, int]:
    """console/broker.py writes one `<ms>_<uuid>.<queue>.msg` file per waiting message."""
    folder = str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    counts = dict.fromkeys(queue_names(), 0)
    with os.scandir(folder) as entries:
        for entry in entries:
            stem, _, ext = entry.name.rpartition(".")
            queue = stem.partition(".")[2]
            if ext == "msg" and queue in counts:
                counts[queue] += 1
    return counts


_redis_clients: dict[str, Any] = {}


def _redis_backlog(url: str) -> dict[str, int]:
    """kombu's Redis transport keeps each queue as a list named after it (priority 0, the
    only one Locus uses)."""
    import redis

    client = _redis_clients.get(url)
    if client is None:
        client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        _redis_clients[url] = client
    pipe = client.pipeline(transaction=False)
    names = queue_names()
    for name in names:
        pipe.llen(name)
    return {name: int(n) for name, n in zip(names, pipe.execute(), strict=True)}


class QueueBacklogCollector(Collector):
    """`locus_queue_backlog{queue}`, measured at scrape time from the broker."""

    def describe(self) -> list[GaugeMetricFamily]:
        return []

    def collect(self) -> Any:
        backlog = queue_backlog()
        if not backlog:
            return
        family = GaugeMetricFamily(
            "locus_queue_backlog",
            "Celery messages waiting in each queue (not counting those a worker holds).",
            labels=["queue"],
        )
        for name, waiting in sorted(backlog.items()):
            family.add_metric([name], waiting)
        yield family
