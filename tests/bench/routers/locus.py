"""Locus's own rows, `locus-<policy>`: `manage.py run_router` over the emulated fleet, on a
scratch database holding the fleet (each node's address its emulated endpoint), with the
policy as the default (`LOCUS_DEFAULT_POLICY`), clients holding a service key.

Locus places on telemetry, so the row runs what a deployment runs beside the router: a scraper
reading every node's vLLM `/metrics` once a second into the telemetry store (`scraper.py`).
Its CPU counts in the row's CPU per request, as a peer's own load polling counts in its row.
One router process serves every model, so every model's URL is the same.

By default the row runs on its own SQLite database and embedded stores, one router process.
`processes` runs `run_router --processes N`, and `env` sets more of its environment, as
`tests/bench/bench_live_deciders.py` does: PostgreSQL and Redis (`DATABASE_URL`, `REDIS_URL`:
the scraper's telemetry and the deciders' shared live view then live in Redis) and
`PROMETHEUS_MULTIPROC_DIR` (every process's series at `/metrics`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from routers.peers import FleetTarget, RouterSpec, RunningRouter, Starter, spawn

REPO = Path(__file__).resolve().parents[3]
SCRAPE_INTERVAL_S = 1.0  # scraper.py's


def _env(var: Path, policy: str, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(extra)
    return env | {
        "LOCUS_VAR_DIR": str(var),
        "LOCUS_DEFAULT_POLICY": policy,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        # The scraper ingests what it reads at once, with no Celery worker to run.
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "PYTHONPATH": str(REPO),
    }


def locus(policy: str, *, processes: int = 1, env: Mapping[str, str] | None = None) -> Starter:
    def start(
        workers: Mapping[str, Sequence[str]], port: int, logs: Path, fleet: FleetTarget
    ) -> RunningRouter:
        var = logs / f"locus-{policy}-var"
        shutil.rmtree(var, ignore_errors=True)
        var.mkdir(parents=True)
        run_env = _env(var, policy, env or {})
        data = yaml.safe_load(fleet.topology_file.read_text())
        for node in data["nodes"]:
            node["address"] = fleet.urls[node["name"]].removeprefix("http://")
        topology = var / "fleet.yaml"
        topology.write_text(yaml.safe_dump(data))
        manage = [sys.executable, str(REPO / "manage.py")]
        for args in (["migrate", "-v", "0"], ["load_topology", str(topology)]):
            subprocess.run([*manage, *args], cwd=REPO, env=run_env, check=True, capture_output=True)
        made = subprocess.run(
            [*manage, "create_api_key", "bench", "--role", "service"],
            cwd=REPO, env=run_env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        router = [*manage, "run_router", "--port", str(port)]
        router += ["--source", fleet.source] if fleet.source else []
        router += ["--processes", str(processes)] if processes > 1 else []
        scraper = [sys.executable, str(Path(__file__).with_name("scraper.py"))]
        scraper += [f"{name}={url}/metrics" for name, url in fleet.urls.items()]
        url = f"http://127.0.0.1:{port}"
        return RunningRouter(
            urls={model: url for model in workers},
            processes=[
                spawn(router, logs / f"locus-{policy}.log", run_env),
                spawn(scraper, logs / f"locus-{policy}-scraper.log", run_env),
            ],
            api_key=made.stdout.strip(),
        )

    return start


def locus_routers() -> list[RouterSpec]:
    """Locus's rows, in report order."""
    return [
        RouterSpec(
            f"locus-{policy}",
            locus(policy),
            f"manage.py run_router, LOCUS_DEFAULT_POLICY={policy}, telemetry scraped every "
            f"{SCRAPE_INTERVAL_S:.0f} s",
        )
        for policy in ("generalist", "weighted-score")
    ]
