"""Property-based fuzzing over the served OpenAPI schema (docs/hardening.md).

Schemathesis (pinned in the dev dependencies) reads /api/schema/ from a real server (uvicorn,
production settings, a SQLite file with the contract's example fleet) and sends generated
requests, valid and invalid, to every operation, once with a key of each role. Every answer
must be a documented status, in the documented shape and content type, and never a 5xx (the
one exception is the contract's 503 when no node may serve a decision).

Bounded: a fixed number of examples per operation and a fixed seed, so the run is
reproducible and takes about two minutes on two cores. Excluded, in schemathesis.toml next to
this file: remote-write (protobuf bodies schemathesis cannot generate; its own tests drive it)
and revoking API keys (the fuzzer would revoke its own). No Celery worker runs here, so
evaluations and training runs the fuzzer starts are only queued, never run.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from subprocess import Popen

import pytest

from tests.conftest import CONTRACT_EXAMPLE, ROLES
from tests.support.server import embedded_env, manage, start_uvicorn

CONFIG = Path(__file__).with_name("schemathesis.toml")
CHECKS = (
    "not_a_server_error,status_code_conformance,response_schema_conformance,"
    "content_type_conformance"
)
# Admins reach every operation, so they get the most examples; the other roles mostly
# check that refusals (403) are documented and well-formed.
EXAMPLES = {"admin": 8, "operator": 4, "viewer": 3, "service": 3}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    var = tmp_path_factory.mktemp("fuzz")
    env = embedded_env(var, LOG_LEVEL="ERROR")  # 4xx answers are the point, not news
    manage(env, "migrate", "-v", "0")
    manage(env, "load_topology", str(CONTRACT_EXAMPLE))
    keys = {role: manage(env, "create_api_key", f"fuzz-{role}", "--role", role) for role in ROLES}
    process: Popen[bytes]
    process, url = start_uvicorn(env)
    try:
        yield url, keys
    finally:
        process.terminate()
        process.wait(timeout=15)


@pytest.mark.parametrize("role", ROLES)
def test_every_answer_matches_the_served_schema(
    served: tuple[str, dict[str, str]], role: str, tmp_path: Path
) -> None:
    url, keys = served
    run = subprocess.run(
        [
            str(Path(sys.executable).with_name("st")),
            "--config-file",
            str(CONFIG),
            "run",
            f"{url}/api/schema/?format=json",
            "--header",
            f"Authorization: Bearer {keys[role]}",
            "--checks",
            CHECKS,
            "--phases",
            "examples,fuzzing",
            "--max-examples",
            str(EXAMPLES[role]),
            "--seed",
            "1",
            "--no-shrink",
            # One worker: hypothesis parses lambda sources with `ast.parse`, which CPython
            # 3.11 can fail with a SystemError when two threads do it at once.
            "--workers",
            "1",
            "--warnings",
            "off",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,  # its cache directory (.schemathesis/) goes there
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "Tested:" in run.stdout
