"""Locus's bench rows start as the harness starts them: `run_router` with the policy on a
scratch database holding the fleet at its emulated addresses, a scraper beside it, ready for
a service-key client, passing the source, and answering from the emulated nodes."""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path

import pytest
import requests

from optimizer.topology_files import load_topology
from routers import fleet as fleets
from routers.locus import _env, locus_routers
from routers.peers import FleetTarget
from routers.test_report import _free_base

REPO = Path(__file__).resolve().parents[3]
SINGLE_SITE = REPO / "optimizer" / "topologies" / "bench-single-site.yaml"


def test_the_rows_are_named_after_their_policy() -> None:
    assert [s.name for s in locus_routers()] == ["locus-generalist", "locus-weighted-score"]


def test_a_row_runs_on_its_own_stores_unless_given_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://elsewhere/db")
    monkeypatch.setenv("REDIS_URL", "redis://elsewhere/0")
    own = _env(tmp_path, "weighted-score", {})
    assert "DATABASE_URL" not in own and "REDIS_URL" not in own
    given = {"DATABASE_URL": "postgres://here/bench", "REDIS_URL": "redis://here/14"}
    assert _env(tmp_path, "weighted-score", given).items() >= given.items()


@pytest.mark.slow
def test_a_locus_row_starts_routes_and_stops(tmp_path: Path) -> None:
    topology = load_topology(SINGLE_SITE)
    base = _free_base(60)
    served = fleets.start_fleet(SINGLE_SITE, topology, base, sys.executable, tmp_path / "f.log")
    spec = {s.name: s for s in locus_routers()}["locus-weighted-score"]
    running = None
    try:
        workers = fleets.workers_by_model(topology, served.urls)
        target = FleetTarget(SINGLE_SITE, served.urls, served.source)
        running = spec.start(workers, base + 40, tmp_path, target)
        fleets.wait_ready(running.urls, running.api_key, timeout_s=120)
        assert fleets.forwards_source(running.urls, running.api_key)
        assert requests.post(
            running.urls["llama-3.1-8b"] + "/v1/completions", json={}, timeout=5
        ).status_code == 401  # fmt: skip
        source = topology.sources[0].name
        answer = requests.post(
            running.urls["llama-3.1-8b"] + "/v1/completions",
            json={"model": "llama-3.1-8b", "prompt": "Hi " * 50, "max_tokens": 2, "stream": True},
            headers={"Authorization": f"Bearer {running.api_key}", "x-locus-source": source},
            timeout=30,
        )
        assert answer.status_code == 200 and answer.headers["x-locus-node"] in served.urls
        time.sleep(2.5)  # two scrapes
        assert all(p.poll() is None for p in running.processes)
        state = tmp_path / "locus-weighted-score-var" / "telemetry-state.sqlite3"
        with sqlite3.connect(state) as db:
            listed = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = [r[0] for r in listed]
            rows = sum(db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)  # noqa: S608
        assert rows > 0
    finally:
        if running is not None:
            running.stop()
        served.stop()
    assert all(p.poll() is not None for p in running.processes)
