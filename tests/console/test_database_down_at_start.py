"""A process started while the database is down cannot tell a valid key from a bad one: it
answers 503 (credentials unknown, retry), never 401 (credentials invalid), and /readyz says
not ready until the key ring has loaded (docs/hardening.md). /healthz stays 200: the process
itself is alive.

The database is a SQLite file in a directory that does not exist yet, so every connection
fails as an unreachable server's would; it "comes back" when the prepared file is moved in.
"""

from __future__ import annotations

from pathlib import Path

import requests

from tests.support.server import embedded_env, manage, start_uvicorn, wait_for


def test_keys_answer_503_until_the_database_is_back(tmp_path: Path) -> None:
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    manage(embedded_env(prepared), "migrate", "-v", "0")
    key = manage(embedded_env(prepared), "create_api_key", "ops", "--role", "viewer")
    down = tmp_path / "down"  # does not exist: "unable to open database file"
    env = embedded_env(tmp_path, DATABASE_URL=f"sqlite:///{down / 'locus.sqlite3'}")
    process, url = start_uvicorn(env)
    headers = {"Authorization": f"Bearer {key}"}
    try:
        assert requests.get(f"{url}/healthz", timeout=10).status_code == 200
        answer = requests.get(f"{url}/api/v1/sites", headers=headers, timeout=10)
        assert answer.status_code == 503, answer.text
        assert "retry" in answer.json()["message"]
        ready = requests.get(f"{url}/readyz", timeout=10)
        assert ready.status_code == 503
        assert ready.json()["checks"]["keyring"]["status"] == "failed"

        prepared.rename(down)  # the database is back
        assert wait_for(
            lambda: (
                requests.get(f"{url}/api/v1/sites", headers=headers, timeout=10).status_code == 200
            )
        )
        wrong = {"Authorization": "Bearer not-a-key"}
        assert requests.get(f"{url}/api/v1/sites", headers=wrong, timeout=10).status_code == 401
        ready = requests.get(f"{url}/readyz", timeout=10).json()
        assert ready["checks"]["keyring"]["status"] == "ok", ready
    finally:
        process.terminate()
        process.wait(timeout=15)
