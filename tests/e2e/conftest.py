"""End-to-end fixtures: the console served by uvicorn in a subprocess, driven by headless Chromium.

The server is the production ASGI app (HTTP and the /ws/live/ websocket in one process, so the
in-memory channel layer carries live events) on a free loopback port, with its own SQLite file
and static root in a temporary directory, the example fleet loaded and one user per role.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CONTRACT_EXAMPLE, REPO

CHROMIUM = Path("/usr/bin/chromium")
DIST_INDEX = REPO / "frontend" / "dist" / "index.html"
ARTIFACTS = REPO / "tests" / "artifacts" / "screenshots"
DOCS_SCREENSHOTS = REPO / "docs" / "screenshots"
PASSWORD = "e2e-Passw0rd!"
USERS = {"vera": "viewer", "otto": "operator", "ada": "admin", "alan": "admin"}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

TELEMETRY_NODE = "fra-h100-1"
# A deliberately tiny training run, so the training page has a finished run to show (the run
# executes eagerly inside the seed, through the API, before the server starts).
TRAINING_TIMESTEPS = 2048

# Runs in a subprocess against the server's database. Telemetry goes in through the public
# ingest API (docs/contracts.md §4), processed at once since Celery runs eagerly here: a quarter
# hour of readings every 20 s, the range the node page charts first.
SEED = f"""
import math
from datetime import UTC, datetime, timedelta

import django
django.setup()
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client

from console.access.services import api_key_create

call_command("migrate", interactive=False, verbosity=0)
call_command("collectstatic", interactive=False, verbosity=0)
call_command("load_topology", {str(CONTRACT_EXAMPLE)!r})
for username, role in {USERS!r}.items():
    user = User.objects.create_user(username, password={PASSWORD!r})
    user.groups.add(Group.objects.get_or_create(name=role)[0])

now = datetime.now(UTC)
samples = []
for i in range(45):
    wave = math.sin(i / 6)
    samples.append({{
        "node": {TELEMETRY_NODE!r},
        "ts": (now - timedelta(seconds=20 * (45 - i))).isoformat(),
        "metrics": {{
            "running": round(24 + 10 * wave), "queue_depth": max(0, round(6 * wave)),
            "kv_usage": round(0.55 + 0.25 * wave, 3), "gpu_util": round(0.7 + 0.2 * wave, 3),
        }},
    }})
key = api_key_create(name="e2e-telemetry", role="service").secret
response = Client(SERVER_NAME="127.0.0.1").post(
    "/api/v1/telemetry/samples", {{"samples": samples}}, content_type="application/json",
    HTTP_AUTHORIZATION="Bearer " + key,
)
assert response.status_code == 202, response.content

admin = Client(SERVER_NAME="127.0.0.1")
admin.force_login(User.objects.get(username="ada"))
response = admin.post(
    "/api/v1/training-runs",
    # The pages need a version whatever its quality: register it even below the baseline.
    {{"timesteps": {TRAINING_TIMESTEPS}, "seed": 0, "register_below_baseline": True}},
    content_type="application/json",
)
assert response.status_code == 202, response.content
"""


def _missing_prerequisites() -> list[str]:
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    if not DIST_INDEX.exists():
        missing.append(f"{DIST_INDEX} (make setup builds the frontend)")
    return missing


def _free_port() -> int:
    """LOCUS_E2E_PORT if set (to keep to a port range on a shared machine), else any free one."""
    if os.environ.get("LOCUS_E2E_PORT"):
        return int(os.environ["LOCUS_E2E_PORT"])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_serving(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the console exited early:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the console did not answer {url} within 60 s:\n{log.read_text()}")


@dataclass(frozen=True)
class Console:
    url: str
    var: Path
    env: dict[str, str]  # the server's environment: a subprocess with it reaches its database


@pytest.fixture(scope="session")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    missing = _missing_prerequisites()
    if missing:
        pytest.skip("end-to-end tests need " + " and ".join(missing))
    var = tmp_path_factory.mktemp("e2e-var")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "LOCUS_VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var / 'e2e.sqlite3'}",
        "REDIS_URL": "",
        "DEBUG": "0",
        "SECRET_KEY": "e2e-only-secret-key-not-for-production",
        "ALLOWED_HOSTS": "127.0.0.1",
        "CELERY_TASK_ALWAYS_EAGER": "1",
        # Evaluations run eagerly inside the request: keep them to a few seconds.
        "LOCUS_EVALUATION_LIMIT": "150",
        "LOCUS_EVALUATION_LOADS": "1",
        "LOCUS_EVALUATION_SEEDS": "0",
        "LOCUS_TRAINING_BC_STEPS": "512",
        "LOCUS_TRAINING_WINDOW": "512",
        # Burn-rate rules a sixtieth of the workbook's (page: 60 s and 5 s, held 2 s), judged
        # after outcomes at most once a second: no beat task runs here.
        "LOCUS_SLO_PERIOD_DAYS": "0.5",
        "LOCUS_SLO_EVAL_INTERVAL_SECONDS": "1",
    }
    subprocess.run([sys.executable, "-c", SEED], cwd=REPO, env=env, check=True)
    (var / "service.key").write_text(
        subprocess.run(
            [sys.executable, "manage.py", "create_api_key", "e2e-service", "--role", "service"],
            cwd=REPO, env=env, check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    port = _free_port()
    log = var / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "console.asgi:application", "--host", "127.0.0.1",
             "--port", str(port), "--lifespan", "off", "--log-level", "warning"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(f"{url}/accounts/login/", server, log)
        yield Console(url, var, env)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="session")
def console_url(console: Console) -> str:
    return console.url


@pytest.fixture(scope="session")
def service_key(console: Console) -> str:
    """The service API key `manage.py create_api_key` printed for the e2e server."""
    return (console.var / "service.key").read_text().strip()


def api_call(base: str, key: str, method: str, path: str, body: object | None = None) -> Any:
    """A JSON request with a bearer key, as a service calls the API (no browser involved)."""
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


# Package scope, not session: Playwright's sync API keeps an event loop running in the main
# thread while it is open, so every later test calling asyncio.run() (the emulator's) would
# fail with "cannot be called from a running event loop" if it stayed open to the session's end.
@pytest.fixture(scope="package")
def browser(console_url: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    # Playwright launches every browser with a fresh temporary profile of its own.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, console_url: str):  # type: ignore[no-untyped-def]
    context = browser.new_context(
        base_url=console_url, viewport={"width": 1440, "height": 900}, color_scheme="light"
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


class Screenshots:
    """Saves a test's screenshots into tests/artifacts/ (every run; CI keeps them). The
    screenshots in docs/dashboard.md come from the living demo instead
    (tests/e2e/screenshot_pages.py)."""

    def __init__(self, test_name: str) -> None:
        self.prefix = test_name.removeprefix("test_")

    def take(self, page, name: str) -> None:  # type: ignore[no-untyped-def]
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{self.prefix}--{name}.png"), full_page=True)


@pytest.fixture
def screenshots(request: pytest.FixtureRequest) -> Screenshots:
    return Screenshots(request.node.name)


def sign_in(page, username: str) -> None:  # type: ignore[no-untyped-def]
    """Opens the dashboard, which sends an anonymous visitor to the login page, and signs in."""
    page.goto("/")
    page.wait_for_url("**/accounts/login/**")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/" not in url)
