"""What a simulated node holds and admits (`optimizer.sim.occupancy`): batch slots, KV room
reserved for whole sequences, first come first served, and the prefix cache beside them."""

from __future__ import annotations

from optimizer.decide.registry import get_policy
from optimizer.sim import simulate
from tests.optimizer.fleets import four_block_run, request, tiny_topology


def test_batch_limit_queues_the_third_sequence() -> None:
    topo = tiny_topology(keep_nodes=("edge-s",))  # max_batch 2
    reqs = [request(topo, prompt=100, output=51) for _ in range(3)]
    result = simulate(topo, get_policy("round-robin", topo), reqs, [0.0, 0.0, 0.0])
    t = result.table
    # The third prefill waits for a decode slot: it starts after the first two finish.
    assert t.ttft[2] > min(t.e2e[0], t.e2e[1])


def test_a_head_without_kv_room_blocks_the_requests_behind_it() -> None:
    """A (1500 + 400 tokens) holds 1900 of the node's 2048 tokens of KV; B (1001) cannot be
    admitted until A finishes, and C (11), which would fit beside A, waits behind B."""
    result = four_block_run(
        [(0.0, 1500, 400, (1, 2, 3)), (0.01, 1000, 1, (4, 5)), (0.02, 10, 1, (6,))]
    )
    t = result.table
    assert 0.01 + t.ttft[1] >= t.e2e[0]
    assert 0.02 + t.ttft[2] >= 0.01 + t.e2e[1]


def test_the_prefix_cache_keeps_what_fits_beside_the_running_sequence() -> None:
    """Blocks 1 and 2 stay cached while request 3 runs (3 blocks + 1 token of 4 blocks), so
    request 4 finds block 1. The running sequence's own prompt blocks count once, not both as
    its reservation and as cache (they did, and block 1 was evicted)."""
    result = four_block_run(
        [(0.0, 512, 1, (1,)), (2.0, 512, 1, (2,)), (4.0, 512, 1, (3,)), (6.0, 512, 1, (1,))]
    )
    assert list(result.table.cached) == [0, 0, 0, 512]
