"""The node model on its own clock, without HTTP: a cancelled request frees what it held at once,
whatever state it was in, and the node goes on as if it had never come."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from optimizer.emulator import EmulatedFleet
from optimizer.emulator.node import DECODE, PREFILL
from optimizer.emulator.sequence import Sequence
from tests.optimizer.emulator.virtual_clock import VirtualClockLoop
from tests.optimizer.fleets import tiny_topology

CORE = 1  # core-l in TINY: 10 ms of RTT from `app`, 10k prefill tokens/s


def _run(scenario: Callable[[EmulatedFleet], Awaitable[None]], **changes: Any) -> None:
    """Run `scenario` on a virtual clock: a sleep in it lasts exactly its model time, however
    busy the machine (the loop's clock is the model's, `optimizer.emulator.engine`)."""

    async def main() -> None:
        await scenario(EmulatedFleet(tiny_topology(**changes)))

    with asyncio.Runner(loop_factory=VirtualClockLoop) as runner:
        runner.run(main())


def _submit(fleet: EmulatedFleet, tokens: int, output: int, first_id: int = 0) -> Sequence:
    hashes = tuple(range(first_id, first_id + tokens // 512))
    return fleet.submit(CORE, "m1", "a-edge", tokens, hashes, output, stream=True)


def _assert_empty(fleet: EmulatedFleet) -> None:
    node = fleet.nodes[CORE]
    assert (node.running, node.reserved, node.in_flight, node.queued_tokens) == (0, 0, 0, 0)
    assert not node.waiting and not node.decoding and not node.pinned
    assert node.cache.pinned_bytes == 0
    assert fleet.engines(CORE)[0].running == 0


def test_a_request_cancelled_on_the_network_never_reaches_the_node() -> None:
    async def scenario(fleet: EmulatedFleet) -> None:
        seq = _submit(fleet, 1000, 10)
        assert fleet.nodes[CORE].in_flight == 1
        fleet.cancel(seq)
        _assert_empty(fleet)
        await asyncio.sleep(0.02)  # past its arrival (5 ms)
        _assert_empty(fleet)
        assert fleet.nodes[CORE].phase != PREFILL

    _run(scenario)


def test_a_queued_request_cancelled_leaves_the_queue() -> None:
    async def scenario(fleet: EmulatedFleet) -> None:
        first = _submit(fleet, 1000, 2)
        second = _submit(fleet, 1000, 2, first_id=100)
        await asyncio.sleep(0.03)
        node = fleet.nodes[CORE]
        assert list(node.waiting) == [second.rid] and fleet.engines(CORE)[0].waiting == 1
        fleet.cancel(second)
        assert not node.waiting and node.queued_tokens == 0
        await fleet.finished(first)
        await asyncio.sleep(0.02)
        _assert_empty(fleet)
        assert fleet.counters[CORE][0].finished == 1

    _run(scenario)


def test_a_prefill_cancelled_frees_the_node_for_the_next() -> None:
    async def scenario(fleet: EmulatedFleet) -> None:
        first = _submit(fleet, 1000, 2)
        await asyncio.sleep(0.03)  # prefilling since 5 ms, for 100 ms
        node = fleet.nodes[CORE]
        assert node.phase == PREFILL and node.running == 1
        fleet.cancel(first)
        _assert_empty(fleet)
        second = _submit(fleet, 500, 1, first_id=100)
        started = fleet.now()
        await fleet.finished(second)
        # 10 ms of RTT and 50 ms of prefill: the cancelled prefill's 75 ms left are not paid.
        assert second.ttft_s < 0.075 and fleet.now() - started < 0.1
        _assert_empty(fleet)

    _run(scenario)


def test_a_decoding_request_cancelled_leaves_the_batch_and_its_kv() -> None:
    async def scenario(fleet: EmulatedFleet) -> None:
        long = _submit(fleet, 512, 10_000)
        short = _submit(fleet, 512, 30, first_id=100)
        tokens = fleet.tokens(long)
        await anext(tokens)
        await asyncio.sleep(0.15)  # both prefilled (51 ms each) and decoding
        node = fleet.nodes[CORE]
        assert node.phase == DECODE and node.batch[0] == 2
        kv = node.reserved
        fleet.cancel(long)
        assert node.batch[0] == 1 and node.reserved == kv - (512 + 10_000) * 1000
        # The round in progress ends, and the rest are a one-sequence step (11 ms, not 12).
        await fleet.finished(short)
        assert short.e2e_s < short.ttft_s + 29 * 0.012
        _assert_empty(fleet)
        # Its blocks stay cached (unpinned) for the next prompt that shares them.
        assert node.cache.match(0, long.hashes) == 1
        generated = fleet.counters[CORE][0].generated_tokens
        assert 30 < generated < 30 + 29  # the short's 30 and the tokens the long one had

    _run(scenario)


def test_a_blocked_head_cancelled_lets_the_next_in_at_the_next_step() -> None:
    async def scenario(fleet: EmulatedFleet) -> None:
        node = fleet.nodes[CORE]
        long = _submit(fleet, 512, 300_000)
        await anext(fleet.tokens(long))
        # Half a GiB of KV (536870 tokens): the head cannot join the long one, the small
        # request behind it could. It is sent 1 ms after the head, so it reaches the node
        # after it (its shorter prompt crosses the 1 Gb/s link 30 us sooner).
        head = _submit(fleet, 1024, 300_000, first_id=100)
        await asyncio.sleep(0.001)
        small = _submit(fleet, 100, 2, first_id=200)
        await asyncio.sleep(0.05)
        assert list(node.waiting) == [head.rid, small.rid] and node.phase == DECODE
        fleet.cancel(head)
        # Left behind the head, the small one would wait for the long one's 300k decode
        # steps (an hour of model time; the timeout ends that case early). Let in, it waits
        # from its arrival the 50 ms before the cancel, then for the decode round in progress
        # (at most 11 ms), prefills (10 ms), and its token reaches its client RTT/2 (5 ms)
        # later. The clock is virtual (`_run`), so these are the model's exact times.
        await asyncio.wait_for(fleet.finished(small), 2.0)
        assert 0.050 + 0.010 + 0.005 - 1e-9 <= small.ttft_s <= 0.050 + 0.011 + 0.010 + 0.005
        fleet.cancel(long)
        _assert_empty(fleet)

    small_kv = [{"name": "small", "memory_gib": 24}, {"name": "big", "memory_gib": 16.5}]
    _run(scenario, accelerators=small_kv)


def _submit_prefilled(fleet: EmulatedFleet, tokens: int, ready_after_s: float) -> Sequence:
    """A split request's decode half (issue #30): its prompt's KV comes from another node."""
    hashes = tuple(range(500, 500 + tokens // 512))
    return fleet.submit(
        CORE, "m1", "a-edge", tokens, hashes, 10, stream=True, prefilled=True,
        ready_after_s=ready_after_s,
    )  # fmt: skip


def test_a_decode_half_cancelled_on_the_network_takes_no_queued_tokens_it_never_added() -> None:
    async def scenario(fleet: EmulatedFleet) -> None:
        seq = _submit_prefilled(fleet, 1000, ready_after_s=0.5)
        node = fleet.nodes[CORE]
        assert (node.in_flight, node.expected, node.queued_tokens) == (1, {seq.rid}, 0)
        fleet.cancel(seq)
        assert not node.expected
        _assert_empty(fleet)

    _run(scenario)


def test_a_decode_half_cancelled_in_the_queue_takes_no_queued_tokens_it_never_added() -> None:
    async def scenario(fleet: EmulatedFleet) -> None:
        first = _submit(fleet, 5000, 2)  # 500 ms of prefill from 5 ms on
        half = _submit_prefilled(fleet, 1000, ready_after_s=0.02)
        await asyncio.sleep(0.05)
        node = fleet.nodes[CORE]
        assert node.current == first.rid and list(node.waiting) == [half.rid]
        assert node.queued_tokens == 0  # the prefilling prompt's left the count at admission
        fleet.cancel(half)
        assert not node.waiting and not node.expected and node.queued_tokens == 0
        fleet.cancel(first)
        _assert_empty(fleet)

    _run(scenario)
