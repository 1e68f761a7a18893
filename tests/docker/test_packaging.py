"""The production files under docker/ (no Docker engine here: they are checked statically).

The compose file is parsed and validated against the Compose Specification by `compose_spec`
(bindings of the Rust `compose_spec` crate: every field typed, references checked)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from compose_spec import PyCompose, PyOptions

from tests.conftest import REPO

DOCKER = REPO / "docker"
COMPOSE = DOCKER / "compose.yaml"
ENV = {"SECRET_KEY": "x", "POSTGRES_PASSWORD": "y"}


def _compose_text() -> str:
    return COMPOSE.read_text()


def _interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable substitution (`${VAR}`, `${VAR:-default}`, `${VAR:?error}`,
    `$$`), which `docker compose` applies before validating."""

    def value(match: re.Match[str]) -> str:
        name, op, arg = match.group(1), match.group(2), match.group(3) or ""
        if name in env:
            return env[name]
        if op == ":?":
            raise ValueError(f"{name} is required: {arg}")
        return arg if op == ":-" else ""

    text = re.sub(r"\$\{(\w+)(:-|:\?)?([^}]*)\}", value, text.replace("$$", "\0"))
    return text.replace("\0", "$")


def _parse(text: str, env: dict[str, str] | None = None) -> PyCompose:
    # The file shares one service template through YAML anchors and merge keys (`<<`).
    return PyOptions(apply_merge=True).from_yaml(_interpolate(text, ENV if env is None else env))


def test_the_compose_file_validates_against_the_compose_specification() -> None:
    compose = _parse(_compose_text())
    compose.validate()
    assert set(compose.service_names()) == {
        "migrate",
        "web",
        "worker-telemetry",
        "worker-jobs",
        "beat",
        "picker",
        "router",
        "postgres",
        "redis",
    }


def test_a_broken_compose_file_is_refused() -> None:
    broken = _compose_text().replace("interval: 15s", "interval: fifteen", 1)
    with pytest.raises(ValueError, match="duration `fifteen`"):
        _parse(broken)


def test_it_refuses_to_start_without_a_secret_key() -> None:
    with pytest.raises(ValueError, match="SECRET_KEY is required"):
        _parse(_compose_text(), env={})


def test_it_refuses_to_start_without_a_database_password() -> None:
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD is required"):
        _parse(_compose_text(), env={"SECRET_KEY": "x"})
    assert ":-locus}" not in _compose_text()  # no default password anywhere


def test_telemetry_and_jobs_have_their_own_workers() -> None:
    services = _services()
    queues = {
        name: services[name]["environment"]["CELERY_QUEUES"]
        for name in ("worker-telemetry", "worker-jobs")
    }
    assert queues == {"worker-telemetry": "telemetry,celery", "worker-jobs": "jobs"}
    entry = (DOCKER / "entrypoint.sh").read_text()
    assert '-Q "${CELERY_QUEUES:-telemetry,celery,jobs}"' in entry


def test_the_web_port_is_published_on_loopback_unless_told_otherwise() -> None:
    ports = _services()["web"]["ports"]
    assert ports == ["${LOCUS_PUBLISH_ADDRESS:-127.0.0.1}:${LOCUS_PORT:-8000}:8000"]
    assert _interpolate(ports[0], ENV) == "127.0.0.1:8000:8000"


def _services() -> dict:  # type: ignore[type-arg]
    """The services with YAML merge keys applied, as compose sees them."""
    return dict(yaml.safe_load(_compose_text())["services"])


def test_every_service_has_a_health_check_and_restarts() -> None:
    for name, service in _services().items():
        if name == "migrate":  # one-shot
            assert service["restart"] == "no" and service["command"] == ["migrate"]
            continue
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"
        assert service.get("restart") == "unless-stopped", name


def test_services_wait_for_healthy_postgres_and_redis_and_migrations() -> None:
    services = _services()
    healthy = {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    assert services["migrate"]["depends_on"] == healthy
    for name in ("web", "worker-telemetry", "worker-jobs", "beat", "picker", "router"):
        assert services[name]["depends_on"] == {
            **healthy,
            "migrate": {"condition": "service_completed_successfully"},
        }, name
        assert services[name]["environment"]["DATABASE_URL"].startswith("postgres://")
        assert services[name]["environment"]["REDIS_URL"] == "redis://redis:6379/0"


def test_configuration_comes_from_the_environment_only() -> None:
    assert "env_file" not in _compose_text()


def test_the_dockerfile_is_multi_stage_non_root_with_cpu_torch() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    stages = re.findall(r"^FROM \S+ AS (\w+)", text, flags=re.MULTILINE)
    assert stages == ["frontend", "python", "runtime"]
    assert re.search(r"^USER locus$", text, flags=re.MULTILINE)
    assert "torch==2.13.0" in text and "whl/cpu" in text
    assert "npm run build" in text and "COPY --from=frontend" in text
    assert "HEALTHCHECK" in text
    # A fresh named volume on var/artifacts must be writable by the non-root user.
    assert "mkdir -p /app/var/artifacts" in text


def test_the_build_context_leaves_out_local_state_and_secrets() -> None:
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".venv", ".env", "var", "frontend/node_modules", ".git"} <= ignored


def test_every_file_the_dockerfile_copies_exists() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", text, flags=re.MULTILINE):
        for path in source.split():
            assert (REPO / path.rstrip("/")).exists(), path


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_the_entrypoint_is_valid_shell_and_refuses_unknown_roles() -> None:
    entry = DOCKER / "entrypoint.sh"
    subprocess.run(["sh", "-n", str(entry)], check=True)
    result = subprocess.run(["sh", str(entry), "nonsense"], capture_output=True, text=True)
    assert result.returncode == 64 and "usage" in result.stderr


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_the_probe_sends_a_host_django_accepts(tmp_path: Path) -> None:
    """The health probe reaches /healthz with the first ALLOWED_HOSTS entry as its Host
    (a probe to 127.0.0.1 is refused when ALLOWED_HOSTS names only the public host)."""
    import http.server
    import threading

    hosts: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            hosts.append(self.headers["Host"])
            self.send_response(200 if self.path == "/healthz" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            "PATH": os.environ["PATH"],
            "PORT": str(server.server_port),
            "ALLOWED_HOSTS": ".locus.example.com,localhost",
        }
        result = subprocess.run(
            ["sh", str(DOCKER / "entrypoint.sh"), "probe"], env=env, capture_output=True
        )
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    assert hosts == ["locus.example.com"]


def test_the_picker_service_publishes_ext_proc_and_probes_readiness() -> None:
    picker = _services()["picker"]
    assert picker["command"] == ["picker"]
    assert picker["ports"] == ["${LOCUS_PICKER_PORT:-9002}:9002"]
    assert picker["healthcheck"]["test"] == ["CMD", "locus-entrypoint", "picker-probe"]
    dockerfile = (DOCKER / "Dockerfile").read_text()
    assert re.search(r"^EXPOSE 8000 8100 9002 9003 9090$", dockerfile, re.M)


def test_the_router_service_publishes_its_port_on_loopback_and_probes_health() -> None:
    router = _services()["router"]
    assert router["command"] == ["router"]
    published = "${LOCUS_PUBLISH_ADDRESS:-127.0.0.1}:${LOCUS_ROUTER_PORT:-8100}:8100"
    assert router["ports"] == [published]
    assert router["healthcheck"]["test"] == ["CMD", "locus-entrypoint", "router-probe"]
    assert router["environment"]["LOCUS_ROUTER_OPEN"] == "${LOCUS_ROUTER_OPEN:-false}"
    entry = (DOCKER / "entrypoint.sh").read_text()
    assert "run_router --host 0.0.0.0 --port 8100" in entry


@pytest.mark.django_db
@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_the_picker_probe_follows_grpc_readiness(settings: object) -> None:
    """`locus-entrypoint picker-probe` fails while the picker has no snapshot, and passes
    once it has one."""
    import sys

    from console.inventory.services import topology_import
    from console.placement.doors.extproc.server import PickerServer
    from console.placement.engine.runtime import runtime
    from optimizer.topology_files import load_topology
    from tests.conftest import CONTRACT_EXAMPLE

    server = PickerServer(port=0, health_port=0, host="127.0.0.1").start()
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "LOCUS_PICKER_HEALTH_PORT": str(server.bound_health_port),
    }

    def probe() -> int:
        entry = str(DOCKER / "entrypoint.sh")
        return subprocess.run(
            ["sh", entry, "picker-probe"], env=env, capture_output=True
        ).returncode

    try:
        assert probe() == 1
        topology_import(topology=load_topology(CONTRACT_EXAMPLE))
        assert runtime().refresh()
        deadline = time.monotonic() + 5
        while probe() != 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert probe() == 0
    finally:
        server.stop()
