"""The simulator's timing and cost against hand computation (docs/contracts.md §1)."""

from __future__ import annotations

import pytest

from optimizer.decide.registry import get_policy
from optimizer.sim import simulate
from optimizer.sim.requests import SERVED
from tests.optimizer.fleets import four_block_run, request, tiny_topology

# One request from a-edge to core-l (b-core): RTT 10 ms, 1 Gbit/s link, 10k prefill tok/s,
# decode step 10 ms + 1 ms per sequence.
RTT = 0.010
TRANSFER = 1000 * 4 * 8 / 1e9  # 1000 tokens x 4 bytes over 1 Gbit/s
PREFILL = 1000 / 10000


def test_single_request_ttft_and_e2e_match_hand_computation() -> None:
    topo = tiny_topology(keep_nodes=("core-l",))
    result = simulate(topo, get_policy("round-robin", topo), [request(topo)], [0.0])
    t = result.table
    assert t.status[0] == SERVED
    assert t.ttft[0] == pytest.approx(RTT + TRANSFER + PREFILL)
    # 11 output tokens: the prefill yields the first, 10 decode steps of 11 ms the rest.
    assert t.e2e[0] == pytest.approx(RTT + TRANSFER + PREFILL + 10 * 0.011)


def test_single_request_cost_is_prorated_node_time_plus_egress() -> None:
    topo = tiny_topology(keep_nodes=("core-l",))
    result = simulate(topo, get_policy("round-robin", topo), [request(topo)], [0.0])
    expected = 4.0 / 3600 * (PREFILL + 10 * 0.011) + 4000 * 0.01 / 1e9
    assert result.table.cost[0] == pytest.approx(expected)


def test_same_site_request_pays_intra_site_rtt_and_no_transfer() -> None:
    topo = tiny_topology(keep_nodes=("edge-s",))
    result = simulate(topo, get_policy("round-robin", topo), [request(topo, output=1)], [2.0])
    # 0.5 ms intra-site RTT, 1000 tokens at 2000 tok/s; one output token ends at prefill.
    assert result.table.ttft[0] == pytest.approx(0.0005 + 0.5)
    assert result.table.e2e[0] == pytest.approx(0.0005 + 0.5)
    assert result.egress_bytes[0] == 0


def test_cached_prefix_skips_prefill_of_its_blocks() -> None:
    topo = tiny_topology(keep_nodes=("core-l",))
    first = request(topo, prompt=1024, output=1, hashes=(1, 2))
    second = request(topo, prompt=1536, output=1, hashes=(1, 2, 3))
    result = simulate(topo, get_policy("round-robin", topo), [first, second], [0.0, 5.0])
    transfer = 1536 * 4 * 8 / 1e9
    # Two 512-token blocks are cached, so only 512 tokens are prefilled.
    assert result.table.cached[1] == 1024
    assert result.table.ttft[1] == pytest.approx(RTT + transfer + 512 / 10000)


def test_second_request_queues_behind_first_prefill() -> None:
    topo = tiny_topology(keep_nodes=("core-l",))
    reqs = [request(topo, output=1), request(topo, output=1)]
    result = simulate(topo, get_policy("round-robin", topo), reqs, [0.0, 0.0])
    # Both reach the node together; the second's prefill starts when the first's ends.
    assert result.table.ttft[1] == pytest.approx(RTT + TRANSFER + 2 * PREFILL)


def test_batched_decode_steps_slow_with_batch_size() -> None:
    topo = tiny_topology(keep_nodes=("core-l",))
    reqs = [request(topo, output=11), request(topo, output=11)]
    result = simulate(topo, get_policy("round-robin", topo), reqs, [0.0, 0.0])
    t = result.table
    # Request 1 decodes alone during request 2's prefill (interrupted at a step boundary),
    # then both decode at 12 ms a step. Hand-simulated: first prefill ends at 0.1+arrival.
    arrive = RTT / 2 + TRANSFER
    p1_end = arrive + PREFILL
    # Request 2 was already waiting, so prefill has priority: it runs right after.
    p2_end = p1_end + PREFILL
    # Then 10 steps of batch 2 (12 ms each) finish both.
    assert t.ttft[1] == pytest.approx(p2_end + RTT / 2)
    assert t.e2e[0] == pytest.approx(p2_end + 10 * 0.012 + RTT / 2)
    assert t.e2e[1] == pytest.approx(p2_end + 10 * 0.012 + RTT / 2)


def test_arrival_during_decode_waits_for_the_step_in_progress() -> None:
    topo = tiny_topology(keep_nodes=("edge-s",))
    reqs = [request(topo, output=101), request(topo, prompt=200, output=1)]
    # The first prefill (0.5 s) ends at 0.50025; the second reaches the node 30.25 ms into
    # decoding, during the second 22 ms step, and starts its prefill when that step ends.
    first_end = 0.00025 + 0.5
    sent = first_end + 0.030
    result = simulate(topo, get_policy("round-robin", topo), reqs, [0.0, sent])
    step_end = first_end + 2 * 0.022
    assert result.table.ttft[1] == pytest.approx(step_end + 200 / 2000 + 0.00025 - sent)


def test_request_longer_than_any_kv_room_is_rejected() -> None:
    topo = tiny_topology(keep_nodes=("edge-s",))  # 8 GiB of KV at 1 kB a token
    huge = request(topo, prompt=9_000_000, output=1)
    result = simulate(topo, get_policy("round-robin", topo), [huge], [0.0])
    assert result.table.status[0] != SERVED
    assert result.reject_reasons["no_kv_room"] == 1


def test_blocks_a_running_sequence_reads_are_never_evicted_under_it() -> None:
    from optimizer.decide.state.prefix import PrefixCache

    cache = PrefixCache()
    cache.add(0, (1, 2, 3), 10)
    cache.pin(0, (1, 2, 3), 0, 1)  # a running sequence reads block 1, the oldest
    cache.shrink(0)  # no room beside the running sequences
    assert (cache.match(0, (1,)), cache.match(0, (2,)), cache.match(0, (3,))) == (1, 0, 0)
    assert (cache.bytes, cache.pinned_bytes) == (10, 10)
    cache.unpin(0, (1, 2, 3), 1)
    cache.shrink(0)
    assert (cache.bytes, cache.pinned_bytes, cache.match(0, (1,))) == (0, 0, 0)


def test_an_arrival_as_a_decode_run_starts_is_prefilled_first() -> None:
    """B arrives the instant A's prefill ends and A's decode run begins: waiting prefills go
    first, so B waits no decode round (it waited one)."""
    result = four_block_run([(0.0, 1000, 11, (1, 2)), (1.0, 100, 3, (9,))])
    # A: 0.5 ms intra-site RTT + 1 s prefill; B reaches the node at 1.0005 s, as A's prefill
    # ends, and is prefilled at once: 0.1 s.
    assert result.table.ttft[1] == pytest.approx(0.0005 + 0.1)
