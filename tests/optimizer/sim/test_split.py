"""The simulator's split requests: roles honoured, prefill, KV transfer, decode (issue #30)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from optimizer.cli import main
from optimizer.commands.replay import Workload
from optimizer.decide.pipeline import Pipeline
from optimizer.decide.registry import get_filter, get_policy, get_splitter
from optimizer.decide.state.fleet import D_QUEUE, D_RUNNING, Fleet
from optimizer.sim import ScheduledEvent, Simulator, simulate
from optimizer.sim.requests import FAILED, PENDING, SERVED
from optimizer.sim.telemetry import TelemetryModel
from optimizer.topology_files import load_topology
from tests.optimizer.fleets import MOONCAKE, PD_NODES, REPO, pd_topology, request, tiny_topology

PD_FLEET = REPO / "optimizer" / "topologies" / "pd-two-regions.yaml"
PROMPT = 10_000
# a-edge -> b-core: RTT 10 ms over 1 Gbit/s; the big prefill node does 10k tokens/s; the
# small decode node steps in 20 ms + 2 ms per sequence; 1 kB of KV a token.
RTT = 0.010
PROMPT_IN = PROMPT * 4 * 8 / 1e9
PREFILL = PROMPT / 10_000
KV = RTT + PROMPT * 1000 * 8 / 1e9  # b-core -> a-edge over the same link
BACK = 0.0005 / 2  # the decode node is at the source's site


def test_a_split_request_prefills_sends_its_kv_then_decodes_at_the_edge() -> None:
    topology = pd_topology(keep_nodes=("core-p", "edge-d"))
    result = simulate(
        topology,
        get_policy("weighted-score", topology),
        [request(topology, prompt=PROMPT, output=11)],
        [0.0],
        splitter=get_splitter("pd-threshold"),
    )
    t, fleet = result.table, Fleet(topology)
    assert t.status[0] == SERVED
    assert (t.prefill_node[0], t.node[0]) == (fleet.index_of["core-p"], fleet.index_of["edge-d"])
    ttft = RTT / 2 + PROMPT_IN + PREFILL + KV + BACK
    assert t.ttft[0] == pytest.approx(ttft)
    assert t.e2e[0] == pytest.approx(ttft + 10 * 0.022)
    # Egress: the prompt to the core, its KV back to the edge.
    assert result.egress_bytes[0] == PROMPT * 4 + PROMPT * 1000
    nodes = {n.name: n for n in result.nodes}
    assert nodes["core-p"].reserved == nodes["edge-d"].reserved == 0
    assert nodes["edge-d"].in_flight == nodes["core-p"].in_flight == 0


def test_the_decode_node_caches_the_prompt_it_received() -> None:
    topology = pd_topology(keep_nodes=("core-p", "edge-d"))
    hashes = tuple(range(PROMPT // 512))
    result = simulate(
        topology,
        get_policy("weighted-score", topology),
        [request(topology, prompt=PROMPT, output=2, hashes=hashes)],
        [0.0],
        splitter=get_splitter("pd-threshold"),
    )
    edge = Fleet(topology).index_of["edge-d"]
    assert result.nodes[edge].cache.match(0, hashes) == len(hashes)


def test_without_a_split_stage_one_phase_nodes_take_no_request() -> None:
    topology = pd_topology()
    reqs = [request(topology, prompt=p) for p in (500, PROMPT, 2000, PROMPT)]
    result = simulate(topology, get_policy("least-loaded", topology), reqs, [0.0, 0.1, 0.2, 0.3])
    fleet = Fleet(topology)
    assert {fleet.names[n] for n in result.table.node} == {"edge-m"}
    assert all(p == -1 for p in result.table.prefill_node)


def test_the_simulator_splits_as_the_pipeline_decides_on_the_same_state() -> None:
    topology = pd_topology()
    req = request(topology, prompt=PROMPT, slo=None)
    policy = get_policy("weighted-score", topology)
    sim = Simulator(topology, policy, [req], [0.0], splitter=get_splitter("pd-threshold"))
    expected = Pipeline([get_filter("constraints")], splitter=get_splitter("pd-threshold")).decide(
        sim.fleet, req, np.array(sim.dynamic), sim.prefix, policy, 1
    )
    result = sim.run()
    assert expected.split
    assert (result.table.node[0], result.table.prefill_node[0]) == (
        expected.node,
        expected.prefill_node,
    )


def test_a_failed_prefill_node_loses_nothing_queued_and_its_decode_node_stops_expecting() -> None:
    topology = pd_topology(keep_nodes=("core-p", "cloud-p", "core-d", "edge-m"))
    reqs = [request(topology, prompt=PROMPT, slo=None) for _ in range(3)]
    result = simulate(
        topology,
        get_policy("weighted-score", topology),
        reqs,
        [0.0, 0.0, 0.0],
        events=[ScheduledEvent(at_s=0.5, node="core-p", action="fail")],
        splitter=get_splitter("pd-threshold"),
    )
    t, fleet = result.table, Fleet(topology)
    # The one prefilling at the failure is lost; the two queued behind it are placed again
    # and prefilled in the cloud.
    assert t.status == [FAILED, SERVED, SERVED]
    assert t.prefill_node[1:] == [fleet.index_of["cloud-p"]] * 2
    assert all(n.in_flight == 0 and n.reserved == 0 and not n.expected for n in result.nodes)


def test_a_decode_half_is_reported_and_counted_as_running_not_as_a_queued_prompt() -> None:
    """Issue #30: the decode node publishes the decode half it expects among its running
    sequences (it needs a batch slot, no prefill), the decider's live state counts it the
    same way between samples, and a sample taken then shows what the live state held."""
    topology = pd_topology(keep_nodes=("core-p", "edge-m"))
    policy = get_policy("weighted-score", topology)
    sim = Simulator(
        topology,
        policy,
        [request(topology, prompt=PROMPT, slo=None)],
        [0.0],
        telemetry=TelemetryModel(interval_s=1000.0),
        splitter=get_splitter("pd-threshold"),
    )
    p, d = sim.fleet.index_of["core-p"], sim.fleet.index_of["edge-m"]
    sim.send(0, d, 0.0, p)
    assert (sim.dynamic[d, D_QUEUE], sim.dynamic[d, D_RUNNING]) == (0, 1)
    assert (sim.dynamic[p, D_QUEUE], sim.dynamic[p, D_RUNNING]) == (1, 0)
    assert sim.placer.telemetry is not None
    feed = sim.placer.telemetry
    held = feed.live.dynamic[:, [D_QUEUE, D_RUNNING]].copy()
    assert held[[p, d]].tolist() == [[1, 0], [0, 1]]
    feed.deliver(feed.take(sim.dynamic, 0.0))
    assert np.array_equal(feed.live.dynamic[:, [D_QUEUE, D_RUNNING]], held)


def _cli(tmp_path: Path, name: str, *extra: str) -> dict[str, Any]:
    out = tmp_path / name
    argv = ["simulate", "--topology", str(PD_FLEET), "--trace", str(MOONCAKE), "--policy",
            "weighted-score", "--limit", "200", "--utilisation", "1.2",
            "--telemetry-interval", "10", "--report", str(out), *extra]  # fmt: skip
    assert main(argv) == 0
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_the_command_line_splits_or_runs_every_node_mixed(tmp_path: Path) -> None:
    def served_by(report: dict[str, Any], role: str) -> int:
        roles = {n.name: n.role for n in load_topology(PD_FLEET).nodes}
        return sum(v["requests"] for n, v in report["per_node"].items() if roles[n] == role)

    roles_only = _cli(tmp_path, "roles.json")
    split = _cli(tmp_path, "split.json", "--split", "pd-threshold")
    mixed = _cli(tmp_path, "mixed.json", "--all-mixed")
    assert served_by(roles_only, "prefill") == served_by(roles_only, "decode") == 0
    assert split["split"] == "pd-threshold" and "split" not in roles_only
    assert served_by(split, "prefill") == 0 < served_by(split, "decode")  # answered by decode
    assert mixed["all_mixed"] is True and served_by(mixed, "prefill") > 0


def _decode_node_fails_with_a_decode_half_waiting() -> Simulator:
    """Request 0 (10k tokens) prefills on edge-m from ~0 to ~5 s; request 1 (10k tokens) is
    split, prefilled on core-p and its KV reaches edge-m at ~1.1 s, where it waits behind
    request 0's prefill; edge-m fails at 2 s. The simulator is left at the failure; core-l
    (big, mixed, in the core) is the only node left that serves a whole request."""
    nodes = [n for n in PD_NODES if n["name"] in ("core-p", "edge-m")]
    core_l = {"name": "core-l", "site": "b-core", "accelerator": "big", "usd_per_hour": 4.0,
              "models": ["m1"]}  # fmt: skip
    model = {"name": "m1", "memory_gib": 16, "kv_bytes_per_token": 1000}
    topology = tiny_topology(nodes=[*nodes, core_l], models=[model])
    sim = Simulator(
        topology,
        get_policy("least-loaded", topology),
        [request(topology, prompt=PROMPT, slo=None) for _ in range(2)],
        [0.0, 0.0],
        events=[ScheduledEvent(at_s=2.0, node="edge-m", action="fail")],
    )
    index = sim.fleet.index_of
    sim.start()
    assert sim.advance() == 0
    sim.send(0, index["edge-m"], sim.now)
    assert sim.advance() == 1
    sim.send(1, index["edge-m"], sim.now, prefill=index["core-p"])
    assert sim.advance(until=1.9) is None
    edge = sim.nodes[index["edge-m"]]
    assert edge.current == 0 and list(edge.waiting) == [1] and edge.queued_tokens == 0
    assert sim.advance(until=2.0) is None
    return sim


def test_a_failed_decode_node_takes_no_queued_tokens_for_the_decode_halves_it_held() -> None:
    sim = _decode_node_fails_with_a_decode_half_waiting()
    edge = sim.nodes[sim.fleet.index_of["edge-m"]]
    assert edge.state == "down" and not edge.expected
    assert edge.queued_tokens == 0


def test_a_decode_half_placed_again_on_one_node_is_prefilled_there() -> None:
    """Its KV died with its decode node: it is prefilled again where it lands."""
    sim = _decode_node_fails_with_a_decode_half_waiting()
    core_l = sim.fleet.index_of["core-l"]
    assert sim.advance() is None
    t = sim.table
    assert t.status == [FAILED, SERVED]
    assert (t.node[1], t.prefill_node[1]) == (core_l, -1)
    # Placed again at 2 s: its prompt to the core (5 ms + 0.32 ms), 1 s of prefill there,
    # 5 ms back; not admitted prefilled at once.
    assert t.ttft[1] == pytest.approx(2.0 + RTT / 2 + PROMPT_IN + PREFILL + RTT / 2)
    assert all(n.queued_tokens == 0 and not n.expected and n.in_flight == 0 for n in sim.nodes)
    assert all(n.reserved == 0 for n in sim.nodes)


def test_a_prefill_node_failing_while_its_kv_crosses_loses_the_request() -> None:
    """The KV leaves core-p at ~1.005 s and would reach edge-d at ~1.095 s; core-p fails at
    1.05 s: what was sent of it is lost with it, so the request fails (it used to be left
    pending) and edge-d stops expecting it."""
    topology = pd_topology(keep_nodes=("core-p", "edge-d"))
    result = simulate(
        topology,
        get_policy("weighted-score", topology),
        [request(topology, prompt=PROMPT, slo=None)],
        [0.0],
        events=[ScheduledEvent(at_s=1.05, node="core-p", action="fail")],
        splitter=get_splitter("pd-threshold"),
    )
    t = result.table
    assert t.prefill_node[0] == Fleet(topology).index_of["core-p"]
    assert t.handed_off[0] == pytest.approx(RTT / 2 + PROMPT_IN + PREFILL)
    assert t.status == [FAILED] and t.resolved == [0]
    assert all(n.queued_tokens == 0 and not n.expected and n.in_flight == 0 for n in result.nodes)
    assert all(n.reserved == 0 for n in result.nodes)


def test_a_split_replay_through_failures_ends_with_every_request_resolved_and_nodes_empty() -> None:
    """The P/D fleet's replay (the command line's `Workload`) with every node failing in turn,
    one a second from 5 s, each back 30 s later: every request ends served, failed or
    rejected (one whose prefill node failed under its KV transfer was left pending), and
    every node ends holding nothing, counting no queued prompt and expecting no decode half."""
    work = Workload.of(str(PD_FLEET), str(MOONCAKE), utilisation=1.2, seed=0, limit=600,
                       telemetry_interval=10.0, split="pd-threshold")  # fmt: skip
    names = [n.name for n in work.topology.nodes]
    work.events = [ScheduledEvent(5.0 + i, n, "fail") for i, n in enumerate(names)]
    work.events += [ScheduledEvent(35.0 + i, n, "recover") for i, n in enumerate(names)]
    _, result = work.run("weighted-score", 0, False)
    t = result.table
    assert PENDING not in t.status
    assert FAILED in t.status and sum(p >= 0 for p in t.prefill_node) > 100
    for n in result.nodes:
        assert (n.queued_tokens, n.in_flight, n.reserved, n.running) == (0, 0, 0, 0), n.name
        assert not n.expected and not n.waiting and not n.handing, n.name
