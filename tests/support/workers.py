"""Each pytest-xdist worker its own Redis database and its own artifacts directory, and the
end-to-end tests on one worker, in order.

Loaded with `-p tests.support.workers` on `make test`'s command line, so it runs before
pytest-django imports the settings (which read both from the environment once). It must be
given there, not in addopts: a plugin named in addopts is imported while `tests` is not yet
importable from `.venv/bin/pytest` on a fresh clone.

Why (`make test` runs two workers): a test's `cache.clear()` flushes the whole Redis database,
which also holds the other worker's channel layer, shared live view and broker; and both
workers' first training run would write var/artifacts/training-runs/1. Before this, a run on
PostgreSQL and Redis failed three tests that pass alone. The environment is changed rather
than the settings so the servers and workers the tests start as subprocesses inherit it.

The end-to-end tests share one console per session (tests/e2e/conftest.py) and each file
leaves its state to the next: test_operations.py expects no open breach, and
test_sre_flows.py, which runs after it, leaves one. Under `--dist loadfile` a worker ran
test_sre_flows.py first and test_operations.py failed; so tests/e2e/ is one unit of work, run
in collection order on one worker (which also starts one console, not two: 24-48 s each), and
given out first, being the longest unit (about four minutes).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import pytest

if TYPE_CHECKING:
    from xdist.remote import Producer
    from xdist.scheduler.protocol import Scheduling
    from xdist.workermanage import WorkerController

REPO = Path(__file__).resolve().parents[2]
# Redis's default `databases 16`: 0..15.
REDIS_DATABASES = 16
# The settings whose default is REDIS_URL (console/settings/): moved with it when the
# environment gives them the same URL.
FOLLOW_REDIS_URL = ("CELERY_BROKER_URL", "LOCUS_SHARED_VIEW_URL", "LOCUS_TELEMETRY_STATE_URL")
# Test files sharing a session's state, run as one unit of work.
E2E = "tests/e2e/"


def worker_number(worker: str) -> int:
    """`gw3` -> 3."""
    if not worker.startswith("gw") or not worker[2:].isdigit():
        raise pytest.UsageError(f"unexpected PYTEST_XDIST_WORKER {worker!r}")
    return int(worker[2:])


def worker_redis_url(url: str, number: int) -> str:
    """REDIS_URL's database N -> N + 1 + the worker's number: the base database is left to
    the run's controller (and to whoever else uses it), each worker gets one of its own."""
    parts = urlsplit(url)
    path = parts.path.strip("/")
    base = int(path) if path else 0
    database = base + 1 + number
    if database >= REDIS_DATABASES:
        raise pytest.UsageError(
            f"REDIS_URL's database {base} leaves no database {database} for xdist worker "
            f"gw{number} (Redis has 0..{REDIS_DATABASES - 1}): use a lower one"
        )
    return urlunsplit(parts._replace(path=f"/{database}"))


def worker_environment(environ: dict[str, str], worker: str) -> dict[str, str]:
    """The variables to set in worker `worker`'s environment."""
    number = worker_number(worker)
    # console/settings/policies.py's default, or the directory the environment names.
    var = Path(environ.get("LOCUS_VAR_DIR") or REPO / "var")
    artifacts = environ.get("LOCUS_ARTIFACTS_DIR") or str(var / "artifacts")
    changes = {"LOCUS_ARTIFACTS_DIR": f"{artifacts}-{worker}"}
    redis = environ.get("REDIS_URL", "")
    if redis:
        ours = worker_redis_url(redis, number)
        changes["REDIS_URL"] = ours
        changes.update({name: ours for name in FOLLOW_REDIS_URL if environ.get(name) == redis})
    return changes


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return  # a serial run, or xdist's controller: nothing is shared
    # What the settings will read: the environment, then `.env` for what it lacks.
    import environ

    environ.FileAwareEnv.read_env(REPO / ".env")
    os.environ.update(worker_environment(dict(os.environ), worker))


def work_unit(nodeid: str) -> str:
    """The unit of work a test goes out in: its file, or tests/e2e/ as a whole."""
    return E2E if nodeid.startswith(E2E) else nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Scheduling | None:
    """`--dist loadfile`, with tests/e2e/ one unit given out first; other modes as xdist has
    them."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Units(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node: WorkerController) -> None:
            if E2E in self.workqueue:
                self.workqueue.move_to_end(E2E, last=False)
            super()._assign_work_unit(node)

    return Units(config, log)
