"""Evaluation replays fan out as Celery tasks; the report is the same whoever ran them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console import worker_stop
from console.celery import app
from console.policies.evaluation import evaluation_jobs, evaluation_report
from console.policies.fanout import fan_out, run_claimed
from console.worker_stop import WorkerStopping
from optimizer.decide.registry import POLICY_NAMES
from optimizer.rl.replays import inline_map
from tests.conftest import CONTRACT_EXAMPLE, TRACES

TRACE = str(TRACES / "mooncake_synthetic.jsonl")
SPECS = list(POLICY_NAMES)  # the candidate (least-loaded) and baseline (weighted-score) among them


def _jobs() -> list[dict[str, Any]]:
    return evaluation_jobs(
        topology_file=str(CONTRACT_EXAMPLE),
        trace=TRACE,
        specs=SPECS,
        loads=[0.5, 2.0],
        seeds=[0, 1],
        limit=60,
    )


def _report(results: list[dict[str, Any]]) -> dict[str, Any]:
    report = evaluation_report(_jobs(), results, TRACE, "least-loaded", "weighted-score", [0, 1])
    for load in report["loads"].values():
        for policy in load["policies"].values():
            policy.pop("wall_seconds", None)  # the only figure that depends on the machine
    return report


def _without_wall_time(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in r.items() if k not in ("wall_seconds", "sim_speedup")} for r in results
    ]


@pytest.fixture(scope="module")
def inline() -> list[dict[str, Any]]:
    return _without_wall_time(inline_map(_jobs()))


def test_workers_running_every_replay_give_the_inline_report(
    tmp_path: Path, inline: list[dict[str, Any]]
) -> None:
    # Eager mode: the group's tasks run (and claim every job) before the waiting loop.
    results = _without_wall_time(fan_out(_jobs(), tmp_path / "eager"))
    assert results == inline
    assert _report(results) == _report(inline)
    assert sorted(p.name for p in (tmp_path / "eager").iterdir())[:2] == ["0.claim", "0.json"]


def test_a_task_with_no_free_worker_runs_every_replay_itself(
    tmp_path: Path, inline: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tasks go to a broker no worker reads (as with one busy worker process): the
    # waiting task claims and runs them all, and never waits for a worker.
    monkeypatch.setattr(app.conf, "task_always_eager", False)
    monkeypatch.setattr(app.conf, "broker_url", "memory://")
    monkeypatch.setattr(app, "_pool", None)  # connections are made afresh, to memory://
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    results = _without_wall_time(fan_out(_jobs(), tmp_path / "alone"))
    assert results == inline


def test_a_claimed_replay_is_run_once_whoever_claims_it(tmp_path: Path) -> None:
    job = _jobs()[0]
    work = tmp_path / "w"
    work.mkdir()
    assert run_claimed(job, str(work), 0) is True
    first = (work / "0.json").read_text()
    assert run_claimed(job, str(work), 0) is False
    assert (work / "0.json").read_text() == first


def test_a_task_arriving_after_its_fan_out_finished_does_nothing(tmp_path: Path) -> None:
    # With one worker process the waiting task ran every job and removed the directory;
    # the queued tasks then find nothing to do.
    assert run_claimed(_jobs()[0], str(tmp_path / "finished-and-removed"), 0) is False
    assert not (tmp_path / "finished-and-removed").exists()


def test_a_used_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "0.claim").write_text("")
    with pytest.raises(ValueError, match="not empty"):
        fan_out(_jobs(), tmp_path)


def test_a_stopping_worker_ends_the_wait_and_leaves_no_job_for_the_queued_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tasks go to a broker no worker reads; the waiting task runs two jobs itself, then
    # its worker is told to stop (console/worker_stop.py).
    monkeypatch.setattr(app.conf, "task_always_eager", False)
    monkeypatch.setattr(app.conf, "broker_url", "memory://")
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    jobs = _jobs()
    ran: list[float] = []

    def progress(fraction: float) -> None:
        ran.append(fraction)
        if len(ran) == 2:
            monkeypatch.setattr(worker_stop, "_stopping_here", True)

    work = tmp_path / "stopped"
    with pytest.raises(WorkerStopping):
        fan_out(jobs, work, progress)
    assert len(ran) == 2
    assert len(list(work.glob("*.json"))) == 2  # no third job was started
    # Every job is claimed: a queued task arriving later skips it instead of replaying.
    assert all(run_claimed(job, str(work), i) is False for i, job in enumerate(jobs))
