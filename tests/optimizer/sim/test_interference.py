"""Prefill-decode interference with chunked prefill (`optimizer.sim.interference`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.cli import main
from optimizer.decide.registry import get_policy, get_splitter
from optimizer.sim import ChunkedPrefill, SimResult, simulate
from optimizer.sim.interference import chunk_run, parse_chunked_prefill, vllm_budget
from optimizer.sim.requests import SERVED
from optimizer.topology_files import load_topology
from tests.optimizer.fleets import MOONCAKE, pd_topology, request, tiny_topology

# core-l (b-core, one "big" GPU): 10k prefill tokens/s, a round of 10 ms + 1 ms a sequence.
# A (1,000 tokens, 11 out) and B (10,000 tokens, 1 out) leave a-edge at 0 over the 10 ms,
# 1 Gbit/s link: A arrives first, prefills alone in 0.1 s, then decodes beside B's prefill.
HALF_RTT = 0.005
A_AT = HALF_RTT + 1000 * 4 * 8 / 1e9
A_FIRST = A_AT + 0.1
ROUND = 0.011  # one sequence decoding
BUDGET = 1000  # a step's tokens: A's decode token and a 999-token chunk of B


def _a_and_b(chunked: ChunkedPrefill | None) -> SimResult:
    topology = tiny_topology(keep_nodes=("core-l",))
    reqs = [request(topology, prompt=1000, output=11), request(topology, prompt=10_000, output=1)]
    return simulate(
        topology, get_policy("round-robin", topology), reqs, [0.0, 0.0], chunked_prefill=chunked
    )


def test_without_chunking_a_prefill_runs_alone_and_stalls_the_decode() -> None:
    t = _a_and_b(None).table
    assert t.ttft[0] == pytest.approx(A_FIRST + HALF_RTT)
    assert t.ttft[1] == pytest.approx(A_FIRST + 1.0 + HALF_RTT)
    # A's ten rounds wait for B's whole prefill.
    assert t.e2e[0] == pytest.approx(A_FIRST + 1.0 + 10 * ROUND + HALF_RTT)


def test_a_chunked_prefill_pays_each_step_s_round_and_the_decode_goes_on() -> None:
    result = _a_and_b(ChunkedPrefill(BUDGET))
    t = result.table
    assert t.status == [SERVED, SERVED]
    # B: 10 steps of a 999-token chunk and one round of A (A's last round ends the 10th),
    # then the last 10 tokens alone.
    run = 9990 / 10_000 + 10 * ROUND
    assert t.e2e[0] == pytest.approx(A_FIRST + run + HALF_RTT)
    assert t.ttft[1] == pytest.approx(A_FIRST + run + 10 / 10_000 + HALF_RTT)
    # The same work in the same node time, and the same bills: B pays its prefill compute,
    # A its prefill and every round it decoded in.
    unchunked = _a_and_b(None)
    assert result.nodes[0].busy_s == pytest.approx(unchunked.nodes[0].busy_s)
    assert t.cost == pytest.approx(unchunked.table.cost)


def test_short_prompts_share_a_step_as_vllm_packs_them_into_its_budget() -> None:
    # A decodes 49 rounds; B, C and D (400 tokens each, one out) queue behind its prefill.
    topology = tiny_topology(keep_nodes=("core-l",))
    reqs = [request(topology, prompt=1000, output=50)]
    reqs += [request(topology, prompt=400, output=1) for _ in range(3)]
    t = simulate(
        topology,
        get_policy("round-robin", topology),
        reqs,
        [0.0, 0.01, 0.01, 0.01],
        chunked_prefill=ChunkedPrefill(BUDGET),
    ).table
    # 1,200 prompt tokens in steps of 999: the first step closes inside D's prefill, with
    # A's round, and the second is left open for A's decode run to close.
    firsts = [A_FIRST + 0.04, A_FIRST + 0.08, A_FIRST + 0.12 + ROUND]
    assert t.ttft[1:] == pytest.approx([f + HALF_RTT - 0.01 for f in firsts])  # sent at 0.01
    assert t.e2e[0] == pytest.approx(A_FIRST + 0.12 + 49 * ROUND + HALF_RTT)


@pytest.mark.parametrize(
    ("left", "fill", "due", "expected"),
    [
        (2500.0, 0.0, 9, (2, 2500.0, 500.0)),  # two steps close, 500 tokens left in the third
        (2500.0, 0.0, 1, (1, 1000.0, 0.0)),  # a sequence finishes when the first step closes
        (400.0, 700.0, 9, (1, 400.0, 100.0)),  # fills the open step, opens another
        (300.0, 700.0, 9, (1, 300.0, 0.0)),  # ends exactly where the step closes
        (200.0, 0.0, 9, (0, 200.0, 200.0)),  # leaves the step open for the next prompt
        (50.0, 1200.0, 9, (1, 50.0, 50.0)),  # the batch grew: the fuller step closes at once
    ],
)
def test_a_run_closes_a_step_every_budget_of_prefill_tokens(
    left: float, fill: float, due: int, expected: tuple[int, float, float]
) -> None:
    assert chunk_run(left, fill, 1000, due) == expected


def test_nodes_that_run_one_phase_pay_nothing() -> None:
    topology = pd_topology(keep_nodes=("core-p", "edge-d"))
    reqs = [request(topology, prompt=10_000, output=40) for _ in range(6)]
    arrivals = [0.0, 0.3, 0.6, 0.9, 1.2, 1.5]

    def run(chunked: ChunkedPrefill | None) -> tuple[list[float], list[float]]:
        t = simulate(
            topology,
            get_policy("weighted-score", topology),
            reqs,
            arrivals,
            splitter=get_splitter("pd-threshold"),
            chunked_prefill=chunked,
        ).table
        assert all(p >= 0 for p in t.prefill_node)  # every request split
        return t.ttft, t.e2e

    assert run(ChunkedPrefill(BUDGET)) == run(None)


def test_the_budget_is_vllms_default_per_gpu_unless_given() -> None:
    assert vllm_budget("h100", 80) == 8192
    assert vllm_budget("l4", 24) == 2048
    assert vllm_budget("A100-80GB", 80) == 2048  # vLLM keeps A100s on the small default
    topology = load_topology("optimizer/topologies/pd-two-regions.yaml")
    names = [n.name for n in topology.nodes]
    budgets = dict(zip(names, ChunkedPrefill().node_budgets(topology), strict=True))
    assert (budgets["fra-m1"], budgets["fra-d1"], budgets["muc-m1"]) == (8192, 16384, 2048)
    assert set(ChunkedPrefill(512).node_budgets(topology)) == {512, 1024}


def test_a_budget_a_full_batch_fills_is_refused() -> None:
    topology = tiny_topology(keep_nodes=("core-l",))  # max_batch 4
    with pytest.raises(ValueError, match="no room for a prefill"):
        ChunkedPrefill(4).node_budgets(topology)
    assert ChunkedPrefill(5).node_budgets(topology) == [5]


@pytest.mark.parametrize("text", ["0", "-3", "many", "1.5"])
def test_a_budget_is_a_whole_number_of_tokens(text: str) -> None:
    with pytest.raises(ValueError, match="token budget"):
        parse_chunked_prefill(text)
    with pytest.raises(SystemExit):
        main(["simulate", "--chunked-prefill", text, "--policy", "x", "--trace", "x"])


def test_the_command_line_runs_it_deterministically_and_reports_it(tmp_path: Path) -> None:
    reports = []
    for i, extra in enumerate(([], ["--chunked-prefill"], ["--chunked-prefill"])):
        out = tmp_path / f"{i}.json"
        assert (
            main(
                [
                    "simulate",
                    "--topology",
                    "optimizer/topologies/pd-two-regions.yaml",
                    "--trace",
                    str(MOONCAKE),
                    "--limit",
                    "300",
                    "--utilisation",
                    "1.2",
                    "--all-mixed",
                    "--policy",
                    "weighted-score",
                    "--report",
                    str(out),
                    *extra,
                ]
            )
            == 0
        )
        report = json.loads(out.read_text())
        report.pop("wall_seconds")
        report.pop("sim_speedup")
        reports.append(report)
    assert "chunked_prefill" not in reports[0]
    assert reports[1]["chunked_prefill"] == "vllm"
    assert reports[1] == reports[2]
    assert reports[1]["ttft_ms"] != reports[0]["ttft_ms"]
