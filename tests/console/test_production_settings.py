"""Production settings (docs/operations.md "Production settings"): with LOCUS_HTTPS=true,
`manage.py check --deploy` raises none of the HTTPS warnings, plain HTTP is redirected except
for probes, metrics and the scheduler extender, and a TLS proxy's X-Forwarded-Proto is
trusted only when LOCUS_TRUST_X_FORWARDED_PROTO says so. Each run is a fresh process, since
settings are read from the environment at start."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# security.W004 HSTS, W008 SSL redirect, W012 session cookie, W016 CSRF cookie.
HTTPS_WARNINGS = ("security.W004", "security.W008", "security.W012", "security.W016")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "LOCUS_VAR_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": "",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        **extra,
    }


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own manage.py
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True
    )


def test_check_deploy_is_clean_of_https_warnings_with_locus_https(tmp_path: Path) -> None:
    plain = _manage(_env(tmp_path), "check", "--deploy").stderr
    assert all(code in plain for code in HTTPS_WARNINGS), plain
    https = _manage(_env(tmp_path, LOCUS_HTTPS="true"), "check", "--deploy").stderr
    assert not [code for code in HTTPS_WARNINGS if code in https], https


def _statuses(env: dict[str, str], headers: dict[str, str]) -> dict[str, int]:
    """GET each path as a plain-HTTP client would, in a process started with `env`."""
    code = (
        "import json\n"
        "from django.test import Client\n"
        "c = Client()\n"
        f"print(json.dumps({{p: c.get(p, HTTP_HOST='localhost', **{headers!r}).status_code"
        " for p in ('/healthz', '/api/v1/me')}))"
    )
    done = _manage(env, "shell", "--no-imports", "-c", code)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    ("extra", "headers", "expected"),
    [
        ({}, {}, {"/healthz": 200, "/api/v1/me": 401}),
        ({"LOCUS_HTTPS": "true"}, {}, {"/healthz": 200, "/api/v1/me": 301}),
        # A client claiming HTTPS is not believed unless the proxy header is trusted.
        ({"LOCUS_HTTPS": "true"}, {"HTTP_X_FORWARDED_PROTO": "https"}, {"/api/v1/me": 301}),
        (
            {"LOCUS_HTTPS": "true", "LOCUS_TRUST_X_FORWARDED_PROTO": "true"},
            {"HTTP_X_FORWARDED_PROTO": "https"},
            {"/api/v1/me": 401},
        ),
    ],
)
def test_plain_http_is_redirected_except_for_probes(
    tmp_path: Path, extra: dict[str, str], headers: dict[str, str], expected: dict[str, int]
) -> None:
    statuses = _statuses(_env(tmp_path, **extra), headers)
    assert {path: statuses[path] for path in expected} == expected
