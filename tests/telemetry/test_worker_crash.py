"""A worker killed in the middle of ingest loses nothing and duplicates nothing.

Runs real `celery -A console worker` processes against PostgreSQL and a Redis broker:
batches are accepted, the first worker is SIGKILLed while it works through them, a second
worker takes over (the inbox redelivery sweep re-enqueues what the dead worker held), and
every accepted value is found stored exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from telemetry.models import Reading, TelemetryBatch
from telemetry.services import batch_accept, batch_redeliver_stale

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")),
        reason="needs DATABASE_URL (PostgreSQL) and REDIS_URL (the Celery broker)",
    ),
]
BATCHES, SAMPLES, METRICS = 16, 500, 20
REPO = Path(__file__).resolve().parents[2]


def _start_worker(queue: str, prefix: str) -> subprocess.Popen[bytes]:
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "LOCUS_TELEMETRY_STATE_PREFIX": prefix,
        "LOCUS_ENGINE_BACKGROUND": "false",
    }
    celery = str(Path(sys.executable).with_name("celery"))
    return subprocess.Popen(  # noqa: S603 - our own worker command
        [
            celery,
            "-A",
            "console",
            "worker",
            "--pool=solo",
            "-Q",
            queue,
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _wait(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def worker_queue(settings: Any) -> Iterator[str]:
    from console.celery import app

    queue = f"locus-test-{uuid.uuid4().hex[:8]}"
    settings.LOCUS_TELEMETRY_QUEUE = queue  # ingest is routed there (console/queues.py)
    saved = app.conf.task_always_eager, app.conf.task_default_queue
    app.conf.task_always_eager = False
    app.conf.task_default_queue = queue
    yield queue
    app.conf.task_always_eager, app.conf.task_default_queue = saved


def test_a_worker_killed_mid_ingest_loses_and_duplicates_nothing(
    fleet: Any, worker_queue: str, settings: Any
) -> None:
    start = datetime.now(UTC) - timedelta(hours=3)
    for b in range(BATCHES):
        samples = [
            {
                "node": "muc-l4-1",
                "ts": (start + timedelta(seconds=b * SAMPLES + i)).isoformat(),
                "metrics": {f"bench_m{m}": float(i + m) for m in range(METRICS)},
            }
            for i in range(SAMPLES)
        ]
        batch_accept(kind="json", body=json.dumps({"samples": samples}).encode())
    accepted = BATCHES * SAMPLES * METRICS
    prefix = settings.LOCUS_TELEMETRY_STATE_PREFIX
    first = _start_worker(worker_queue, prefix)
    second = None
    try:
        _wait(lambda: TelemetryBatch.objects.count() <= BATCHES - 2, 60, "the first batches")
        _kill(first)  # SIGKILL: no cleanup, no ack, an open transaction cut off
        left = TelemetryBatch.objects.count()
        assert 0 < left < BATCHES, "kill the worker while batches are still pending"
        second = _start_worker(worker_queue, prefix)
        batch_redeliver_stale(older_than_s=0)  # what the beat task does after a while
        _wait(lambda: not TelemetryBatch.objects.exists(), 90, "the inbox to drain")
    finally:
        _kill(first)
        if second is not None:
            _kill(second)
    assert Reading.objects.count() == accepted
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM (SELECT DISTINCT series_id, ts FROM telemetry_reading) d"
        )
        assert cursor.fetchone()[0] == accepted
