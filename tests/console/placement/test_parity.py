"""docs/architecture.md rule 1: a decision served over HTTP and one made in the simulator on the
same state give the same scores.

The simulator replays a real trace part-way over the demo fleet, leaving queues, batches and
KV caches loaded. That state reaches the console the way production state does: as telemetry
pushed to the ingest API (queue depth, running requests, KV-cache usage per node). A decision
is then asked over HTTP with `explain`, and its scores are compared with the simulator's own
policy scores on its own state columns, reduced to what exporters report (they do not publish
queued prompt tokens or cache contents, so those are left out on both sides).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from console.inventory.services import topology_import
from console.placement.engine.runtime import runtime
from optimizer.arrivals import draw_requests
from optimizer.decide.explain import guard_note
from optimizer.decide.registry import get_policy, load_policy
from optimizer.decide.request import placement_request
from optimizer.decide.state.fleet import (
    D_KV_USED,
    D_QUEUE,
    D_QUEUED_TOKENS,
    D_RUNNING,
    S_KV_CAPACITY,
)
from optimizer.sim import Simulator
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace
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
    "generalist",
    "generalist-guarded",  # inside its trust region, in the console as in the simulator
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
    # What exporters publish: no queued prompt tokens, no cache contents.
    exported = sim.dynamic.copy()
    exported[:, D_QUEUED_TOKENS] = 0
    assert exported[:, [D_QUEUE, D_RUNNING]].sum() > 0, "the fleet should be busy"
    capacity = sim.fleet.static[0][:, S_KV_CAPACITY]
    now = datetime.now(UTC).isoformat()
    samples = [
        {
            "node": name,
            "ts": now,
            "metrics": {
                "queue_depth": int(exported[i, D_QUEUE]),
                "running": int(exported[i, D_RUNNING]),
                "kv_usage": exported[i, D_KV_USED] / capacity[i],
            },
        }
        for i, name in enumerate(sim.fleet.names)
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
    # The simulator's own pipeline, on the state the console was shown.
    candidates, trip = sim.pipeline.candidates(sim.fleet, request, exported, None)
    policy = load_policy(policy_name, topology)
    sim_scores = policy.score(candidates)
    assert set(http_scores) == set(candidates.names)
    rejected = trip.rejected()
    assert {r["node"]: r["reason"] for r in answer["rejected"]} == rejected
    # The learned scorer computes in float32: its scores agree to float32's precision.
    rtol = 1e-5 if policy_name.startswith("generalist") else 1e-9
    np.testing.assert_allclose(
        [http_scores[name] for name in candidates.names], sim_scores, rtol=rtol, atol=1e-12
    )
    assert answer["node"] == candidates.names[int(np.argmax(sim_scores))]
    note = guard_note(policy)
    if note is not None:  # the trust region's verdict on this decision, on both sides
        assert answer["guard"]["verdict"] == note["verdict"]
        assert answer["guard"]["anchor"] == note["anchor"]
