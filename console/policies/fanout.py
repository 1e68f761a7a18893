"""Replays fanned out over every jobs worker, with the waiting task working too.

An evaluation (policies x loads x seeds) or a training validation is a list of plain-JSON
replay jobs (`optimizer.rl.replays`). `fan_out` sends one `run_replay_job` task per job as a
Celery group, then works through the list itself from the end while the workers take jobs
from the front. Each job is run once: whoever first creates its claim file (an exclusive
create, atomic on a local or NFS filesystem) runs it and writes its result beside the claim;
the other side skips it or waits for the file. So a task waiting on its replays never
deadlocks a single worker process (it ends up running them all), more worker processes
share the work, and in eager mode (tests) the group runs inline before the waiting loop.
Every job's result depends on the job alone, so the report assembled from them is the same
whoever ran which job (tests/console/policies/test_fanout.py).

A stopping worker (`console.worker_stop`) ends the wait between two jobs: the jobs nobody has
claimed yet are claimed on the way out, so their queued tasks skip them instead of replaying
for a fan-out that is gone, and `WorkerStopping` goes up to the job that fanned out.

Claims and results live under `LOCUS_ARTIFACTS_DIR`, which workers already share: trained
scorers are read from there too.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from celery import group, shared_task
from django.conf import settings

from console.worker_stop import WorkerStopping, raise_if_stopping
from optimizer.rl.replays import Job, run_replay

POLL_S = 0.2


def _claim(path: Path) -> bool:
    """Take `path` exclusively; False when another process took it first, or when its
    directory is gone (the fan-out finished without this task and cleaned up)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except (FileExistsError, FileNotFoundError):
        return False
    return True


def _write_result(path: Path, result: dict[str, Any]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(result), encoding="utf-8")
    temporary.replace(path)  # readers never see half a file


def run_claimed(job: Job, work_dir: str, index: int) -> bool:
    """Run job `index` of a fan-out in `work_dir` unless someone claimed it; True if run."""
    directory = Path(work_dir)
    if not _claim(directory / f"{index}.claim"):
        return False
    _write_result(directory / f"{index}.json", run_replay(job))
    return True


@shared_task(acks_late=True)
def run_replay_job(job: dict[str, Any], work_dir: str, index: int) -> bool:
    """One replay of a fan-out, on whichever jobs worker takes it. Declared here, beside
    `fan_out`, not in tasks.py: evaluations and training runs (tasks themselves) fan out to
    it, so it sits below them."""
    return run_claimed(job, work_dir, index)


def fan_out(
    jobs: Sequence[Job],
    work_dir: Path,
    progress: Callable[[float], None] | None = None,
) -> list[dict[str, Any]]:
    """The results of `jobs`, in order, computed by the workers and by this process."""
    work_dir.mkdir(parents=True, exist_ok=True)
    if any(work_dir.iterdir()):
        raise ValueError(f"fan-out directory {work_dir} is not empty")
    group(run_replay_job.s(job, str(work_dir), i) for i, job in enumerate(jobs)).apply_async()
    try:
        return _gather(jobs, work_dir, progress)
    except WorkerStopping:
        for index in range(len(jobs)):
            _claim(work_dir / f"{index}.claim")
        raise


def _gather(
    jobs: Sequence[Job], work_dir: Path, progress: Callable[[float], None] | None
) -> list[dict[str, Any]]:
    for index in reversed(range(len(jobs))):
        raise_if_stopping()
        run_claimed(jobs[index], str(work_dir), index)
        if progress is not None:
            progress(_done(work_dir, len(jobs)) / max(len(jobs), 1))
    deadline = time.monotonic() + settings.LOCUS_REPLAY_TIMEOUT_S
    while (done := _done(work_dir, len(jobs))) < len(jobs):
        raise_if_stopping()
        if time.monotonic() > deadline:
            # A worker died holding claims: run what is missing here (same job, same result).
            for index in range(len(jobs)):
                if not (work_dir / f"{index}.json").is_file():
                    _write_result(work_dir / f"{index}.json", run_replay(jobs[index]))
            break
        if progress is not None:
            progress(done / len(jobs))
        time.sleep(POLL_S)
    return [json.loads((work_dir / f"{i}.json").read_text("utf-8")) for i in range(len(jobs))]


def _done(work_dir: Path, count: int) -> int:
    return sum((work_dir / f"{i}.json").is_file() for i in range(count))
