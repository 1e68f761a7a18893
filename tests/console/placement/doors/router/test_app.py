"""The router's other routes: `/v1/models` (the inventory's models, for a key holder),
`/health` (ready once the engine holds a snapshot), `/metrics`, and OpenAI-shaped errors for
paths and methods it does not serve."""

from __future__ import annotations

from typing import Any

import pytest
import requests
import yaml

from console.placement.doors.router.app import RouterServer

pytestmark = pytest.mark.django_db


def test_models_lists_the_inventorys_models(router: RouterServer, service_key: str) -> None:
    answer = requests.get(
        router.url + "/v1/models", headers={"Authorization": f"Bearer {service_key}"}, timeout=5
    )
    assert answer.status_code == 200
    listing = answer.json()
    assert listing["object"] == "list"
    assert [m["id"] for m in listing["data"]] == ["m1", "m2"]
    assert {m["object"] for m in listing["data"]} == {"model"}
    assert requests.get(router.url + "/v1/models", timeout=5).status_code == 401


def test_health_and_calls_wait_for_the_engines_snapshot(
    engine_settings: Any, settings: Any
) -> None:
    # An empty inventory is no fleet: the engine has no snapshot yet.
    from console.inventory.services import topology_import
    from console.placement.engine.runtime import runtime
    from optimizer.topology_files import parse_topology
    from tests.console.placement.doors.router.conftest import FLEET

    settings.LOCUS_ROUTER_OPEN = True
    server = RouterServer(port=0, source="app").start()
    try:
        assert requests.get(server.url + "/health", timeout=5).status_code == 503
        body = {"model": "m1", "prompt": "Hi", "max_tokens": 1}
        early = requests.post(server.url + "/v1/completions", json=body, timeout=5)
        assert early.status_code == 503 and "snapshot" in early.json()["error"]["message"]
        topology_import(topology=parse_topology(yaml.safe_dump(FLEET)))
        assert runtime().refresh()
        assert requests.get(server.url + "/health", timeout=5).json() == {"status": "ok"}
    finally:
        server.stop()


def test_metrics_show_the_routers_own_series(router: RouterServer, service_key: str) -> None:
    body = {"model": "m1", "prompt": "Hi", "max_tokens": 1}
    headers = {"Authorization": f"Bearer {service_key}"}
    requests.post(router.url + "/v1/completions", json=body, headers=headers, timeout=10)
    text = requests.get(router.url + "/metrics", timeout=5).text
    assert "locus_router_overhead_seconds_bucket" in text
    assert 'locus_router_calls_total{status="2xx"}' in text
    assert "locus_decisions_total" in text or "locus_decision" in text


def test_unknown_paths_and_methods_answer_in_openais_shape(router: RouterServer) -> None:
    missing = requests.post(router.url + "/v1/embeddings", json={}, timeout=5)
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    wrong = requests.get(router.url + "/v1/completions", timeout=5)
    assert wrong.status_code == 405 and "error" in wrong.json()
