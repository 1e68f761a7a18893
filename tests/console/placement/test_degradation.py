"""docs/architecture.md rule 2: with PostgreSQL gone, and separately with Redis gone, a running
server keeps serving decisions, and the decision records accepted meanwhile are written once it is
back, even when the server is killed during the outage (its record journal is adopted by the
next one, docs/deploying.md "Failover").

A real server (uvicorn, production settings) reaches PostgreSQL and Redis through TCP proxies
that the test cuts, as a crashed or partitioned service would look; the machine's services
themselves are never stopped. Skips where PostgreSQL or Redis is not running locally.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import requests

from tests.conftest import CONTRACT_EXAMPLE, REPO
from tests.support.server import manage
from tests.support.tcp_proxy import TcpProxy

PG = "postgres://postgres@127.0.0.1:5432"
DECISION = {
    "model": "llama-3.1-8b",
    "source": "munich-app",
    "prompt_tokens": 700,
    "max_output_tokens": 64,
}


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


pytestmark = pytest.mark.skipif(
    not (_listening(5432) and _listening(6379)),
    reason="needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379",
)


@dataclass
class Server:
    url: str
    key: str
    database: str
    postgres: TcpProxy
    redis: TcpProxy
    env: dict[str, str]
    process: subprocess.Popen[bytes]

    def restart(self, sig: signal.Signals) -> None:
        """Stop the server with `sig` and start another on the same port and settings."""
        self.process.send_signal(sig)
        self.process.wait(timeout=15)
        self.process = _serve(self.env, int(self.url.rsplit(":", 1)[1]))

    def decide(self) -> requests.Response:
        return requests.post(
            f"{self.url}/api/v1/placements",
            json=DECISION,
            timeout=10,
            headers={"Authorization": f"Bearer {self.key}"},
        )

    def recorded(self) -> int:
        with psycopg.connect(f"{PG}/{self.database}") as conn:
            row = conn.execute("SELECT count(*) FROM placement_decisionrecord").fetchone()
        return int(row[0]) if row else 0

    def outcome_of(self, decision_id: str) -> tuple[object, ...] | None:
        with psycopg.connect(f"{PG}/{self.database}") as conn:
            return conn.execute(
                "SELECT ok, ttft_ms FROM placement_decisionrecord WHERE id = %s", (decision_id,)
            ).fetchone()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Template:
    """A database migrated, with the contract's example fleet and a service key, that each
    test's database is copied from (`CREATE DATABASE ... TEMPLATE`): a copy takes a fraction
    of a second, the three management commands that make it several seconds."""

    database: str
    key: str


def _pg(statement: str) -> None:
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(statement)


@pytest.fixture(scope="module")
def template() -> Iterator[Template]:
    database = f"locus_degrade_tpl_{uuid.uuid4().hex[:8]}"
    _pg(f'CREATE DATABASE "{database}"')
    env = {
        **os.environ,
        "DATABASE_URL": f"{PG}/{database}",
        "SECRET_KEY": "degradation-test",
        "DEBUG": "false",
    }
    env.pop("REDIS_URL", None)
    try:
        manage(env, "migrate", "-v", "0")
        manage(env, "load_topology", str(CONTRACT_EXAMPLE))
        yield Template(database, manage(env, "create_api_key", "router", "--role", "service"))
    finally:
        _pg(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


@pytest.fixture
def server(tmp_path: Path, template: Template) -> Iterator[Server]:
    database = f"locus_degrade_{uuid.uuid4().hex[:8]}"
    _pg(f'CREATE DATABASE "{database}" TEMPLATE "{template.database}"')
    postgres, redis = TcpProxy(5432).start(), TcpProxy(6379).start()
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{postgres.port}/{database}",
        "REDIS_URL": f"redis://127.0.0.1:{redis.port}/13",
        "SECRET_KEY": "degradation-test",
        "DEBUG": "false",
        "LOCUS_VAR_DIR": str(tmp_path),
        "LOCUS_SNAPSHOT_REFRESH_SECONDS": "0.5",
        "DATABASE_CONN_MAX_AGE": "60",
    }
    port = _free_port()
    server = Server(
        f"http://127.0.0.1:{port}", template.key, database, postgres, redis, env, _serve(env, port)
    )
    try:
        yield server
    finally:
        server.process.terminate()
        server.process.wait(timeout=10)
        postgres.cut()
        redis.cut()
        _pg(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _serve(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    """uvicorn serving the console on `port`, once /healthz answers."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "console.asgi:application",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=REPO,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=3).ok:
                return process
        except requests.RequestException:
            time.sleep(0.2)
    process.kill()
    pytest.fail("the server did not start")


def _wait_for(condition: object, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.25)
    return False


def test_decisions_go_on_with_postgres_down_and_nothing_is_lost(server: Server) -> None:
    assert all(server.decide().status_code == 200 for _ in range(5))
    assert _wait_for(lambda: server.recorded() == 5)
    server.postgres.cut()
    answers = []
    for _ in range(40):
        answers.append(server.decide())
        time.sleep(0.05)  # spans several failing snapshot refreshes and flushes
    assert [a.status_code for a in answers] == [200] * 40
    decision_id = answers[-1].json()["decision_id"]
    outcome = requests.post(
        f"{server.url}/api/v1/placements/{decision_id}/outcome",
        json={"ok": True, "ttft_ms": 120, "e2e_ms": 900},
        timeout=10,
        headers={"Authorization": f"Bearer {server.key}"},
    )
    assert outcome.status_code == 200
    ready = requests.get(f"{server.url}/readyz", timeout=10)
    assert ready.status_code == 503 and ready.json()["checks"]["database"]["status"] == "failed"
    assert server.recorded() == 5  # the outage was real: nothing reached the database
    server.postgres.restore()
    assert _wait_for(lambda: server.recorded() == 45), server.recorded()
    assert _wait_for(lambda: server.outcome_of(decision_id) == (True, 120.0))


def test_decisions_go_on_with_redis_down(server: Server) -> None:
    assert server.decide().status_code == 200
    server.redis.cut()
    answers = []
    for _ in range(40):
        answers.append(server.decide())
        time.sleep(0.05)
    assert [a.status_code for a in answers] == [200] * 40
    ready = requests.get(f"{server.url}/readyz", timeout=10)
    assert ready.json()["checks"]["broker"]["status"] == "failed"
    server.redis.restore()
    assert _wait_for(lambda: server.recorded() == 41), server.recorded()


def test_a_server_killed_while_postgres_is_down_loses_no_record(server: Server) -> None:
    """Decisions and an outcome accepted during the outage sit in the killed server's memory
    and journal; the next server adopts the journal and writes them once PostgreSQL is back."""
    assert server.decide().status_code == 200
    assert _wait_for(lambda: server.recorded() == 1)
    server.postgres.cut()
    with ThreadPoolExecutor(4) as pool:  # under load: four clients at once
        answers = list(pool.map(lambda _: server.decide(), range(60)))
    assert [a.status_code for a in answers] == [200] * 60
    decision_id = answers[-1].json()["decision_id"]
    outcome = requests.post(
        f"{server.url}/api/v1/placements/{decision_id}/outcome",
        json={"ok": True, "ttft_ms": 120, "e2e_ms": 900},
        timeout=10,
        headers={"Authorization": f"Bearer {server.key}"},
    )
    assert outcome.status_code == 200
    assert server.recorded() == 1  # the outage was real: nothing reached the database
    server.postgres.restore()
    server.restart(signal.SIGKILL)  # killed before its recorder noticed the database is back
    assert server.decide().status_code == 200  # the engine starts, and adopts the journal
    assert _wait_for(lambda: server.recorded() == 62), server.recorded()
    assert _wait_for(lambda: server.outcome_of(decision_id) == (True, 120.0))


def test_decisions_go_on_under_load_with_redis_down_and_are_recorded(server: Server) -> None:
    """Records never pass through Redis: with it gone, the shared breakers and the live
    stream degrade, and decisions and their records go on."""
    assert server.decide().status_code == 200
    server.redis.cut()
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: server.decide(), range(60)))
    assert [a.status_code for a in answers] == [200] * 60
    assert _wait_for(lambda: server.recorded() == 61), server.recorded()
    server.redis.restore()
    assert server.decide().status_code == 200
    assert _wait_for(lambda: server.recorded() == 62), server.recorded()
