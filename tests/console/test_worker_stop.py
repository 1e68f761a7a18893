"""A worker told to stop does not wait for a long job: the job stops at its next step, goes
back to queued and sends itself again, and the worker is gone within seconds
(console/worker_stop.py). Runs the Procfile's jobs worker for real, on its own embedded
console, with a training run far too long to finish."""

from __future__ import annotations

import json
import shlex
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from console import worker_stop
from console.policies.evaluation import evaluation_execute
from console.policies.models import PolicyEvaluation
from console.worker_stop import WorkerStopping
from tests.conftest import REPO
from tests.console.embedded import manage_shell
from tests.console.policies.test_rollout import Admins

# What the test allows from SIGTERM to a worker gone: one PPO update or one replay of the
# job, then Celery's own stop. `make run` gives each process 20 s.
STOP_BUDGET_S = 15.0


def _procfile_worker_jobs() -> list[str]:
    """The Procfile's `worker-jobs` command, as `make run` starts it."""
    lines = (REPO / "Procfile").read_text().splitlines()
    command = next(line.split(": ", 1)[1] for line in lines if line.startswith("worker-jobs:"))
    return shlex.split(command.replace("--loglevel=WARNING", "--loglevel=INFO"))


def _run(database: str) -> dict[str, Any]:
    with sqlite3.connect(database) as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT status, metrics, log_tail FROM policies_trainingrun").fetchone()
    return dict(row)


def _queued_messages(var: Path) -> list[str]:
    """The names of the tasks waiting in the embedded broker's jobs queue."""
    names = []
    for message in (var / "celery-broker").glob("*.jobs.msg"):
        names.append(json.loads(message.read_text())["headers"]["task"])
    return names


# Serial: STOP_BUDGET_S is real time for a subprocess mid-PPO, which a parallel worker's load
# would stretch.
@pytest.mark.serial
def test_a_stopped_jobs_worker_requeues_its_training_run_and_exits_in_time(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    env = embedded | {
        "LOCUS_ARTIFACTS_DIR": str(tmp_path / "artifacts"),
        "LOCUS_TRAINING_WINDOW": "256",  # short episodes and validation replays
    }
    manage_shell(
        env,
        "from django.conf import settings\n"
        "from console.policies.jobs import training_start\n"
        "training_start(config={'trace': settings.LOCUS_FLEET_TRACE, 'timesteps': 10**7,"
        " 'seed': 0, 'init': 'generalist'}, started_by=None)",
    )
    assert _queued_messages(tmp_path) == ["console.policies.tasks.run_training"]
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(  # noqa: S603 - the Procfile's own command
        _procfile_worker_jobs(), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    database = env["DATABASE_URL"].removeprefix("sqlite:///")
    try:
        deadline = time.monotonic() + 180
        # Into PPO: past the baselines' and the start's fanned-out validations.
        while not any(m.get("phase") == "ppo" for m in json.loads(_run(database)["metrics"])):
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            assert time.monotonic() < deadline, _run(database)
            time.sleep(0.5)
        stopped_at = time.monotonic()
        worker.send_signal(signal.SIGTERM)  # as `make run`'s supervisor and Docker do
        status = worker.wait(timeout=60)
        took = time.monotonic() - stopped_at
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        log.close()
    shown = (tmp_path / "worker.log").read_text()
    assert status == 0, shown[-3000:]
    assert took < STOP_BUDGET_S, shown[-3000:]
    run = _run(database)
    assert run["status"] == "queued"
    assert run["log_tail"].endswith("requeued: the worker stopped")
    # The run waits in the queue for the next start; the replays its validations fanned out
    # may wait there too, but every one is claimed, so they skip at once.
    waiting = _queued_messages(tmp_path)
    assert waiting.count("console.policies.tasks.run_training") == 1
    assert set(waiting) <= {
        "console.policies.tasks.run_training",
        "console.policies.fanout.run_replay_job",
    }
    assert "Traceback" not in shown and "ERROR" not in shown
    assert not list((tmp_path / "worker-stop").iterdir())  # the stop mark is gone with it


@pytest.mark.django_db
def test_an_evaluation_whose_worker_stops_goes_back_to_queued(
    fleet: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    admins = Admins(django_capture_on_commit_callbacks)
    policy = admins.alice.post(
        "/api/v1/policies",
        {"name": "least-loaded", "version": "v1", "heuristic": "least-loaded"},
        format="json",
    ).json()
    with admins.capture(execute=False):  # queued, not run
        started = admins.alice.post(
            f"/api/v1/policies/{policy['id']}/evaluate", {"seeds": [0]}, format="json"
        )
    assert started.status_code == 202, started.content
    evaluation = PolicyEvaluation.objects.get()
    monkeypatch.setattr(worker_stop, "_stopping_here", True)  # the worker was told to stop
    with pytest.raises(WorkerStopping):
        evaluation_execute(evaluation_id=evaluation.pk)
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.progress, evaluation.report) == ("queued", 0.0, {})
    # The next start runs it to the end.
    monkeypatch.setattr(worker_stop, "_stopping_here", False)
    evaluation_execute(evaluation_id=evaluation.pk)
    evaluation.refresh_from_db()
    assert evaluation.status == "succeeded" and evaluation.report["loads"]
