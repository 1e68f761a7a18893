"""Heavy jobs never starve telemetry (issue 13, finding 4): telemetry tasks and the canary
watchdog are routed to the `telemetry` queue, training runs and evaluations to `jobs`, and a
real `celery worker -Q telemetry,celery` (the Procfile's worker-telemetry) ingests a pushed
batch while a job waits in the jobs queue untouched."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from console.celery import app
from tests.conftest import REPO
from tests.console.embedded import manage_shell

TELEMETRY_TASKS = (
    "telemetry.ingest_batch",
    "telemetry.scrape_all",
    "telemetry.scrape_one",
    "telemetry.check_freshness",
    "telemetry.redeliver_inbox",
    "telemetry.rollup",
    "console.policies.tasks.canary_watchdog",
    "console.twin.tasks.check_probe",
)
JOB_TASKS = (
    "console.policies.tasks.run_training",
    "console.policies.tasks.run_evaluation",
    "console.policies.fanout.run_replay_job",
    "console.twin.tasks.run_calibration",
)


@pytest.fixture(autouse=True)
def _tasks_registered() -> None:
    app.loader.import_default_modules()  # what a worker does at start: find every task


def _queue(task: str) -> str:
    return str(app.amqp.router.route({}, task)["queue"].name)


@pytest.mark.parametrize("task", TELEMETRY_TASKS)
def test_telemetry_tasks_and_the_watchdog_go_to_the_telemetry_queue(task: str) -> None:
    assert task in app.tasks
    assert _queue(task) == "telemetry"


@pytest.mark.parametrize("task", JOB_TASKS)
def test_training_and_evaluations_go_to_the_jobs_queue(task: str) -> None:
    assert task in app.tasks
    assert _queue(task) == "jobs"


def test_no_task_of_ours_is_left_on_the_default_queue() -> None:
    # The telemetry worker also consumes the default queue: a heavy task left there (as the
    # evaluation fan-out's replays and calibrations once were) holds telemetry's only slot.
    ours = [name for name in app.tasks if not name.startswith("celery.")]
    assert ours
    assert {name: _queue(name) for name in ours if _queue(name) == "celery"} == {}


def test_the_procfile_runs_one_worker_per_queue_within_two_cores() -> None:
    processes = dict(
        line.split(": ", 1) for line in (REPO / "Procfile").read_text().splitlines() if line
    )
    assert "worker" not in processes
    assert "-Q telemetry,celery " in processes["worker-telemetry"]
    assert "-Q jobs " in processes["worker-jobs"]
    for name in ("worker-telemetry", "worker-jobs"):
        assert "--concurrency=1" in processes[name]


@pytest.fixture
def telemetry_worker(embedded: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    celery = str(Path(sys.executable).with_name("celery"))
    worker = subprocess.Popen(  # noqa: S603 - the Procfile's worker-telemetry command
        [celery, "-A", "console", "worker", "-Q", "telemetry,celery", "--pool=solo"]
        + ["--loglevel=WARNING", "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=REPO,
        env=embedded,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    yield worker
    os.killpg(worker.pid, signal.SIGTERM)
    worker.wait(timeout=20)


def test_a_telemetry_worker_ingests_while_a_job_waits_in_the_jobs_queue(
    embedded: dict[str, str], telemetry_worker: subprocess.Popen[bytes]
) -> None:
    sample = {
        "samples": [
            {
                "node": "muc-l4-1",
                "ts": datetime.now(UTC).isoformat(),
                "metrics": {"queue_depth": 3.0, "kv_cache_usage": 0.4},
            }
        ]
    }
    # A training run is queued first (as the demo's is), then telemetry arrives.
    manage_shell(
        embedded,
        "from console.policies.tasks import run_training; run_training.delay(1)\n"
        "from telemetry.services import batch_accept\n"
        f"batch_accept(kind='json', body={json.dumps(sample).encode()!r})",
    )
    database = embedded["DATABASE_URL"].removeprefix("sqlite:///")
    deadline = time.monotonic() + 60
    while True:
        with sqlite3.connect(database) as db:
            pending = db.execute("SELECT count(*) FROM telemetry_telemetrybatch").fetchone()[0]
            stored = db.execute("SELECT count(*) FROM telemetry_reading").fetchone()[0]
        if pending == 0 and stored == 2:
            break
        assert telemetry_worker.poll() is None, "the telemetry worker died"
        assert time.monotonic() < deadline, f"ingest stuck: {pending} batches, {stored} readings"
        time.sleep(0.2)
    # The job still waits for the jobs worker, and /metrics says so.
    metrics = manage_shell(
        embedded,
        "from django.test import Client\n"
        "print(Client().get('/metrics', HTTP_HOST='localhost').content.decode())",
    )
    backlog = {
        sample.labels["queue"]: sample.value
        for family in text_string_to_metric_families(metrics)
        if family.name == "locus_queue_backlog"
        for sample in family.samples
    }
    assert backlog == {"celery": 0, "jobs": 1, "telemetry": 0}
