"""The fault test of docs/hardening.md: one poisoned request among 10,000 decisions costs
nothing else. Every other decision record and reported outcome reaches the database while the
server runs, and the ones still queued when it gets SIGTERM are written before it exits.

A real uvicorn process on the embedded defaults (a SQLite file), started as the Procfile
starts it; decisions go in batches through the fast path, the poisoned request (the audit's
NUL in `session_id`) through the single-decision endpoint.
"""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

import pytest
import requests

from tests.conftest import CONTRACT_EXAMPLE
from tests.support.server import embedded_env, manage, start_uvicorn, wait_for

DECISION = {"model": "llama-3.1-8b", "source": "munich-app", "max_output_tokens": 64}
BATCH = 1000
OUTCOMES_PER_HALF = 500


@dataclass
class Server:
    process: Popen[bytes]
    url: str
    database: Path
    session: requests.Session

    def decide_batch(self, start: int) -> list[str]:
        body = {
            "requests": [
                {**DECISION, "prompt_tokens": 100 + i % 900, "session_id": f"s-{i}"}
                for i in range(start, start + BATCH)
            ]
        }
        answer = self.session.post(f"{self.url}/api/v1/placements:batch", json=body, timeout=60)
        assert answer.status_code == 200, answer.text
        return [d["decision_id"] for d in answer.json()["decisions"]]

    def report(self, decision_ids: list[str]) -> None:
        def one(decision_id: str) -> int:
            outcome = {"ok": True, "ttft_ms": 100.0, "e2e_ms": 900.0}
            url = f"{self.url}/api/v1/placements/{decision_id}/outcome"
            return self.session.post(url, json=outcome, timeout=30).status_code

        with ThreadPoolExecutor(max_workers=4) as pool:
            assert set(pool.map(one, decision_ids)) == {200}

    def stored(self) -> tuple[int, int]:
        """(records, records with an outcome) in the database."""
        with sqlite3.connect(self.database, timeout=20) as conn:
            row = conn.execute(
                "SELECT count(*), count(outcome_at) FROM placement_decisionrecord"
            ).fetchone()
        return int(row[0]), int(row[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    env = embedded_env(tmp_path, LOCUS_SNAPSHOT_REFRESH_SECONDS="0.5")
    manage(env, "migrate", "-v", "0")
    manage(env, "load_topology", str(CONTRACT_EXAMPLE))
    key = manage(env, "create_api_key", "router", "--role", "service")
    process, url = start_uvicorn(env)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {key}"
    try:
        yield Server(process, url, tmp_path / "locus.sqlite3", session)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def test_one_poisoned_request_among_10000_decisions_loses_nothing_else(server: Server) -> None:
    first = [i for start in range(0, 5000, BATCH) for i in server.decide_batch(start)]
    poisoned = server.session.post(
        f"{server.url}/api/v1/placements",
        json={**DECISION, "prompt_tokens": 10, "session_id": "a\x00b"},
        timeout=10,
    )
    assert poisoned.status_code == 400, poisoned.text
    assert "session_id" in poisoned.json()["errors"]
    server.report(first[:OUTCOMES_PER_HALF])
    # Before the SIGTERM: everything so far is written while the server runs.
    assert wait_for(lambda: server.stored() == (5000, OUTCOMES_PER_HALF)), server.stored()
    ready = server.session.get(f"{server.url}/readyz", timeout=10).json()
    assert ready["checks"]["recorder"]["status"].startswith("ok"), ready

    second = [i for start in range(5000, 10_000, BATCH) for i in server.decide_batch(start)]
    server.report(second[-OUTCOMES_PER_HALF:])
    # SIGTERM at once, with the last records and outcomes still queued in memory.
    server.process.send_signal(signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal it caught (so -SIGTERM).
    assert server.process.wait(timeout=30) in (0, -signal.SIGTERM)
    assert server.stored() == (10_000, 2 * OUTCOMES_PER_HALF)
    assert len(set(first + second)) == 10_000
