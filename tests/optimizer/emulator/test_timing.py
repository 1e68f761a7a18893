"""Timing follows the profile, through real HTTP: prefill, decode steps, batching, the queue
beyond the batch limit, the prefix cache and the network (docs/contracts.md §1). Server and
client share a loop on the virtual clock (tests/optimizer/emulator/timing.py), so what the
client measures is the model's time to the float, under any load.

TINY (tests/optimizer/fleets.py): source `app` at a-edge; core-l at b-core, 10 ms of RTT and
1 Gbit/s away, prefills 10k tokens/s and decodes in 10 ms + 1 ms a sequence; edge-s at a-edge
(0.5 ms within the site) prefills 2k tokens/s, decodes in 20 ms + 2 ms a sequence, batch 2.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from optimizer.emulator import trace_prompt
from tests.optimizer.emulator.timing import EXACT_S, Served, assert_on_time, run
from tests.optimizer.fleets import tiny_topology

RTT = 0.010
INTRA = 0.0005


def _transfer(tokens: int) -> float:
    return tokens * 4 * 8 / 1e9  # 4 bytes a token over 1 Gbit/s


def test_one_request_takes_rtt_transfer_prefill_then_one_step_a_token() -> None:
    async def scenario(served: Served) -> None:
        body = {"model": "m1", "prompt": list(range(1000)), "max_tokens": 11}
        timed = await served.stream("core-l", body)
        model = served.model(1000)
        assert model.ttft_s == pytest.approx(RTT + _transfer(1000) + 0.100)
        assert model.e2e_s == pytest.approx(model.ttft_s + 10 * 0.011)
        assert_on_time(timed.ttft, model.ttft_s)
        assert len(timed.token_times) == 11
        # Ten decode steps of 10 ms + 1 ms for the one sequence.
        assert_on_time(timed.token_times[-1] - timed.sent, model.e2e_s)
        # Each token streamed as its step ends (not all at the end): every gap is a step.
        gaps = [b - a for a, b in itertools.pairwise(timed.token_times)]
        assert gaps == pytest.approx([0.011] * 10, abs=EXACT_S)

    run(tiny_topology(), scenario)


def test_a_batch_of_four_decodes_at_the_step_for_four() -> None:
    async def scenario(served: Served) -> None:
        # Prompts of distinct token ids: no block is shared, none is cached.
        prompts = [list(range(10_000 * i, 10_000 * i + 1000 + i)) for i in range(4)]
        bodies = [{"model": "m1", "prompt": p, "max_tokens": 41} for p in prompts]
        timed = await asyncio.gather(*(served.stream("core-l", b) for b in bodies))
        # Prefills run one at a time (about 100 ms each), in the order the requests reached
        # the node; once the fourth is done, all four decode together at 10 + 4 x 1 ms a step:
        # the last one's 40 steps take 560 ms (440 ms if the batch were ignored).
        first, *_, last = sorted(served.ended, key=lambda s: s.at_node or 0.0)
        assert last.e2e_s - last.ttft_s == pytest.approx(40 * 0.014)
        client = timed[last.prompt_tokens - 1000]
        assert_on_time(client.token_times[-1] - client.token_times[0], 40 * 0.014)
        # Its first token comes after the four prefills, counted from the first's arrival.
        prefills = sum(s.prompt_tokens for s in served.ended) / 10_000
        assert last.arrival + last.ttft_s - first.arrival == pytest.approx(
            RTT + _transfer(first.prompt_tokens) + prefills, abs=1e-6
        )
        assert_on_time(client.ttft, last.ttft_s)

    run(tiny_topology(), scenario)


def test_requests_beyond_the_batch_limit_wait_for_a_slot() -> None:
    async def scenario(served: Served) -> None:
        bodies = [
            {"model": "m1", "prompt": list(range(100 + i)), "max_tokens": 6} for i in range(3)
        ]
        timed = await asyncio.gather(*(served.stream("edge-s", b) for b in bodies))
        # edge-s decodes 2 at once: the first two prefill (2k tokens/s) and decode their 5
        # steps together at 20 + 2 x 2 ms; only then may the third start its prefill
        # (120 ms sooner if it did not wait).
        one, two, three = sorted(served.ended, key=lambda s: s.at_node or 0.0)
        done = (one.prompt_tokens + two.prompt_tokens) / 2000 + 5 * 0.024
        assert three.arrival + three.ttft_s - one.arrival == pytest.approx(
            INTRA + done + three.prompt_tokens / 2000, abs=1e-6
        )
        assert_on_time(timed[three.prompt_tokens - 100].ttft, three.ttft_s)

    run(tiny_topology(), scenario)


def test_a_cached_prefix_skips_its_prefill() -> None:
    async def scenario(served: Served) -> None:
        first = trace_prompt([1, 2, 3, 4], 2048)
        second = trace_prompt([1, 2, 3, 5], 2050)  # shares three 512-token blocks
        one = await served.stream("core-l", {"model": "m1", "prompt": first, "max_tokens": 1})
        two = await served.stream("core-l", {"model": "m1", "prompt": second, "max_tokens": 1})
        assert served.model(2048).cached_tokens == 0
        assert served.model(2050).cached_tokens == 3 * 512
        assert_on_time(one.ttft, RTT + _transfer(2048) + 0.2048)
        assert_on_time(two.ttft, RTT + _transfer(2050) + (2050 - 1536) / 10000)

    run(tiny_topology(), scenario)
