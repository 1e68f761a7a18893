"""A long job stops by itself when its worker is told to stop, and goes back to the queue.

A training run or an evaluation runs for minutes on the jobs worker. Told to stop (Ctrl-C on
`make run`, SIGTERM from an orchestrator), that worker makes Celery 5.5's soft shutdown: the
task in hand gets `CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT` seconds, then the pool child is
killed. A child killed there can die holding the pool's result-queue lock, and the worker's
main process then hangs in `billiard.pool._terminate_pool` until it is SIGKILLed (seen with
py-spy on the demo's first training run; the family of celery/billiard#457), so the stop
never ends cleanly.

So the worker's main process, on `worker_shutting_down`, leaves a stop mark, and a long job
asks `raise_if_stopping()` between its steps (PPO updates, replays): it raises
`WorkerStopping`, the service puts its row back to queued, and the task rejects its message
with requeue (late acks keep it unacknowledged until then), so the next worker start runs it
again from the beginning. The job ends within one step, well inside the soft shutdown, and
no child is ever killed.

The mark is a file named after the main process's pid under `VAR_DIR/worker-stop/`: a
prefork pool child runs in another process and asks for its parent's mark (`os.getppid()`);
a solo pool or an eager run asks in process. A stale mark left by a killed worker is removed
when a worker with that pid starts.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from celery.signals import worker_init, worker_process_init, worker_shutdown, worker_shutting_down
from django.conf import settings

logger = logging.getLogger(__name__)

_stopping_here = False
# In a prefork pool child: the parent's mark. Elsewhere None, so a process that is no pool
# child never reads a mark another process's pid happens to name.
_parent_mark: Path | None = None


class WorkerStopping(Exception):
    """The worker running this job is stopping: put the job back and end it now."""


def _mark(pid: int) -> Path:
    return Path(settings.VAR_DIR) / "worker-stop" / str(pid)


def stop_requested() -> bool:
    """True once this worker (this process, or a prefork pool's parent) is stopping."""
    return _stopping_here or (_parent_mark is not None and _parent_mark.exists())


def raise_if_stopping() -> None:
    """Raise `WorkerStopping` when the worker is stopping; cheap enough for every step (one
    stat(2))."""
    if stop_requested():
        raise WorkerStopping("the worker is stopping; the job goes back to the queue")


@worker_init.connect
def _forget_stale_mark(**_: Any) -> None:
    _mark(os.getpid()).unlink(missing_ok=True)


@worker_process_init.connect
def _watch_parent(**_: Any) -> None:
    global _parent_mark
    _parent_mark = _mark(os.getppid())


@worker_shutting_down.connect
def _leave_mark(sig: str = "", how: str = "", **_: Any) -> None:
    global _stopping_here
    _stopping_here = True
    mark = _mark(os.getpid())
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(f"{sig} {how}\n", encoding="utf-8")
    logger.info("worker stopping (%s, %s): running jobs will requeue themselves", sig, how)


@worker_shutdown.connect
def _remove_mark(**_: Any) -> None:
    _mark(os.getpid()).unlink(missing_ok=True)
