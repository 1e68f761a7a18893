"""Each xdist worker's Redis database and artifacts directory (tests/support/workers.py)."""

from __future__ import annotations

import pytest

from tests.support.workers import REPO, work_unit, worker_environment, worker_redis_url


def test_each_worker_gets_the_next_database_after_the_base() -> None:
    assert worker_redis_url("redis://127.0.0.1:6379/0", 0) == "redis://127.0.0.1:6379/1"
    assert worker_redis_url("redis://127.0.0.1:6379/8", 1) == "redis://127.0.0.1:6379/10"
    # No database in the URL is database 0; a password and query survive.
    assert worker_redis_url("redis://h:6379", 1) == "redis://h:6379/2"
    assert worker_redis_url("redis://:pw@h:6379/3?x=1", 0) == "redis://:pw@h:6379/4?x=1"


def test_a_database_past_redis_s_sixteen_is_refused() -> None:
    assert worker_redis_url("redis://h/13", 1) == "redis://h/15"
    with pytest.raises(pytest.UsageError, match="gw2"):
        worker_redis_url("redis://h/13", 2)


def test_a_worker_s_environment_moves_redis_and_what_follows_it() -> None:
    base = "redis://127.0.0.1:6379/8"
    environ = {
        "REDIS_URL": base,
        "CELERY_BROKER_URL": base,
        "LOCUS_SHARED_VIEW_URL": "redis://other:6379/0",
    }
    assert worker_environment(environ, "gw1") == {
        "LOCUS_ARTIFACTS_DIR": str(REPO / "var" / "artifacts-gw1"),
        "REDIS_URL": "redis://127.0.0.1:6379/10",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/10",
    }


def test_without_redis_only_the_artifacts_move() -> None:
    assert worker_environment({"LOCUS_VAR_DIR": "/srv/locus"}, "gw0") == {
        "LOCUS_ARTIFACTS_DIR": "/srv/locus/artifacts-gw0"
    }
    assert worker_environment({"LOCUS_ARTIFACTS_DIR": "/a"}, "gw3") == {
        "LOCUS_ARTIFACTS_DIR": "/a-gw3"
    }
    with pytest.raises(pytest.UsageError):
        worker_environment({}, "master")


def test_the_end_to_end_tests_are_one_unit_and_the_rest_go_by_file() -> None:
    assert work_unit("tests/e2e/test_operations.py::test_a") == "tests/e2e/"
    assert work_unit("tests/e2e/test_sre_flows.py::test_b[x::y]") == "tests/e2e/"
    assert work_unit("tests/console/test_web.py::Cls::test_c") == "tests/console/test_web.py"
