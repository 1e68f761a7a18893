"""docs/architecture.md rule 1: a decision served over HTTP and one made in the simulator on the
same state give the same scores.

The simulator replays a real trace part-way over the demo fleet, leaving queues, batches and
KV caches loaded. That state reaches the console the way production state does: as telemetry
pushed to the ingest API (queue depth, running requests, KV-cache usage per node). A decision
is then asked over HTTP with `explain`, and its scores are compared with the simulator's own
policy scores on its own node views, reduced to what exporters report (they do not publish
queued prompt tokens or cache contents, so those are left out on both sides).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from console.inventory.services import topology_import
from console.placement.engine.runtime import runtime
from optimizer.constraints import filter_candidates
from optimizer.decision import placement_request
from optimizer.policies import get_policy
from optimizer.sim import Simulator
from optimizer.topology import load_topology
from optimizer.traces import draw_requests, load_trace
from tests.conftest import TOPOLOGIES, TRACES

pytestmark = pytest.mark.django_db
POLICIES = (
    "weighted-score",
    "latency-first",
    "least-loaded",
    "prefix-aware",
    "kv-aware",
    "cost-first",
    "data-gravity",
)


@pytest.mark.parametrize("policy_name", POLICIES)
def test_http_and_simulator_give_the_same_scores(
    policy_name: str,
    engine_settings: Any,
    client_for: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    engine_settings.LOCUS_DEFAULT_POLICY = policy_name
    topology = load_topology(TOPOLOGIES / "fleet-demo.yaml")
    topology_import(topology=topology)
    trace = load_trace(TRACES / "mooncake_synthetic.jsonl", limit=600, load=4.0)
    requests = draw_requests(trace, topology, seed=0)
    sim = Simulator(
        topology, get_policy("least-loaded", topology), requests, [r.arrival_s for r in trace]
    )
    sim.start()
    for _ in range(400):  # place 400 arrivals: a busy fleet mid-run
        rid = sim.advance()
        assert rid is not None
        sim.place(rid, sim.now)

    model = "llama-3.1-8b"
    index = [m.name for m in topology.models].index(model)
    exported = [
        dataclasses.replace(v, queued_prompt_tokens=0, prefix_blocks=0)
        for v in sim.views_by_model[index]
    ]
    assert sum(v.queue_depth + v.running for v in exported) > 0, "the fleet should be busy"
    now = datetime.now(UTC).isoformat()
    samples = [
        {
            "node": v.name,
            "ts": now,
            "metrics": {
                "queue_depth": v.queue_depth,
                "running": v.running,
                "kv_usage": v.kv_used_bytes / v.kv_capacity_bytes,
            },
        }
        for v in exported
    ]
    with django_capture_on_commit_callbacks(execute=True):
        accepted = client_for("service").post(
            "/api/v1/telemetry/samples", {"samples": samples}, format="json"
        )
    assert accepted.status_code == 202, accepted.content
    runtime().refresh()

    source = topology.sources[0]
    body = {
        "model": model,
        "source": source.name,
        "prompt_tokens": 3000,
        "max_output_tokens": 300,
        "explain": True,
    }
    response = client_for("service").post("/api/v1/placements", body, format="json")
    answer = response.json()
    assert "policy" in answer, (response.status_code, answer)
    assert answer["policy"]["name"] == policy_name
    http_scores = {c["node"]: c["score"] for c in answer["candidates"]}

    request = placement_request(
        topology,
        model=model,
        source_site=source.site,
        slo=source.slo,
        prompt_tokens=3000,
        max_output_tokens=300,
        source=source.name,
    )
    candidates, rejected = filter_candidates(request, exported, topology)
    sim_scores = get_policy(policy_name, topology).scores(request, candidates, topology)
    assert set(http_scores) == {c.name for c in candidates}
    assert {r["node"]: r["reason"] for r in answer["rejected"]} == rejected
    np.testing.assert_allclose(
        [http_scores[c.name] for c in candidates], sim_scores, rtol=1e-9, atol=1e-12
    )
    assert answer["node"] == candidates[int(np.argmax(sim_scores))].name
