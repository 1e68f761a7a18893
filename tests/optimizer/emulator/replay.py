"""The same requests through the emulator (real HTTP) and through the simulator.

A slice of the shipped Mooncake trace, its arrivals compressed by `load`, its outputs capped
so a replay takes seconds, goes to one node: its prompts as text that carries the trace's
prefix sharing (`trace_prompt`), streamed open loop (each request sent at its arrival time,
whatever the others are doing) by a client on the server's own event loop; and the same
requests (the same token counts and block ids) through the simulator. Used by
test_replay.py on the virtual clock (tests/optimizer/emulator/timing.py) and by
tests/bench/bench_emulator.py on the real one.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, replace

from optimizer.decide.registry import get_policy
from optimizer.decide.request import placement_request
from optimizer.emulator import trace_prompt
from optimizer.emulator.sequence import Sequence
from optimizer.prompts import prompt_blocks
from optimizer.sim import simulate
from optimizer.sim.requests import RequestTable
from optimizer.topology import Topology
from optimizer.topology_files import parse_topology
from optimizer.traces import load_trace
from tests.optimizer.emulator.timing import Served, run
from tests.optimizer.fleets import MOONCAKE

# One node a 10 ms RTT from the source; fast enough that the slice's arrivals, compressed,
# keep it busy about three quarters of the time (prefill dominates: Mooncake's prompts are
# long), with queueing, batching and shared prefixes all at work.
TOPOLOGY = """
version: 1
sites:
  - {name: edge, tier: edge, region: r, jurisdiction: EU}
  - {name: dc, tier: regional, region: r, jurisdiction: EU}
links: [{a: edge, b: dc, rtt_ms: 10, bandwidth_gbps: 10, egress_usd_per_gb: 0.01}]
accelerators: [{name: gpu, memory_gib: 80}]
models: [{name: m, memory_gib: 16, kv_bytes_per_token: 1024}]
profiles:
  - {model: m, accelerator: gpu, prefill_tokens_per_s: 400000, decode_step_ms: 5,
     decode_step_ms_per_seq: 0.1, max_batch: 8}
nodes: [{name: n1, site: dc, accelerator: gpu, usd_per_hour: 2, models: [m]}]
sources: [{name: app, site: edge, share: 1, slo: s}]
slos: [{name: s, ttft_p95_ms: 1000, e2e_p95_ms: 10000}]
workload: {models: [{name: m, share: 1}]}
"""


@dataclass(frozen=True)
class Pair:
    """One request's TTFT (seconds) as the client measured it, as the emulator's model had
    it, and as the simulator had it; and its cached prompt tokens in each."""

    client: float
    emulator: float
    simulator: float  # on the trace's arrival times
    resimulated: float  # on the arrival times the emulator received the requests at
    cached_emulator: int
    cached_simulator: int
    received: float  # when the emulator received it, model seconds from the first


def replay(
    requests: int = 60, load: float = 6.0, max_output: int = 32, *, real_time: bool = False
) -> list[Pair]:
    """Replay the first `requests` of the Mooncake trace both ways; pairs in arrival order.
    The emulator's loop runs on the virtual clock, or on the real one with `real_time`."""
    topology = parse_topology(TOPOLOGY, "replay.yaml")
    trace = load_trace(MOONCAKE, limit=requests, load=load)
    prompts = [trace_prompt(r.hash_ids, r.prompt_tokens) for r in trace]
    outputs = [min(r.output_tokens, max_output) for r in trace]
    arrivals = [r.arrival_s for r in trace]

    async def scenario(served: Served) -> list[float]:
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.05

        async def one(i: int) -> float:
            await asyncio.sleep(start + arrivals[i] - loop.time())
            body = {"model": "m", "prompt": prompts[i], "max_tokens": outputs[i]}
            return (await served.stream("n1", body)).ttft

        return list(await asyncio.gather(*(one(i) for i in range(len(trace)))))

    # The model's record of each request, found by its prompt (identical prompts in the
    # trace are seconds apart: their arrival order is their sending order).
    model: dict[tuple[int, tuple[int, ...]], list[Sequence]] = defaultdict(list)

    async def record(served: Served) -> list[float]:
        ttfts = await scenario(served)
        for seq in sorted(served.ended, key=lambda s: s.arrival):
            model[(seq.prompt_tokens, seq.hashes)].append(seq)
        return ttfts

    client = run(topology, record, real_time=real_time)
    blocks = [prompt_blocks(p) for p in prompts]
    table = _simulate(topology, blocks, outputs, arrivals)
    pairs = []
    for i, key in enumerate(blocks):
        seq = model[key].pop(0)
        pairs.append(
            Pair(
                client[i],
                seq.ttft_s,
                table.ttft[i],
                0.0,
                seq.cached_tokens,
                table.cached[i],
                seq.arrival,
            )
        )
    first = min(p.received for p in pairs)
    received = [p.received - first for p in pairs]
    again = _simulate(topology, blocks, outputs, received)
    return [
        replace(p, received=at, resimulated=again.ttft[i])
        for i, (p, at) in enumerate(zip(pairs, received, strict=True))
    ]


def _simulate(
    topology: Topology,
    blocks: list[tuple[int, tuple[int, ...]]],
    outputs: list[int],
    arrivals: list[float],
) -> RequestTable:
    requests = [
        placement_request(
            topology,
            model="m",
            source_site="edge",
            slo="s",
            prompt_tokens=tokens,
            max_output_tokens=output,
            prefix_hashes=hashes,
            source="app",
        )
        for (tokens, hashes), output in zip(blocks, outputs, strict=True)
    ]
    # One node: every policy places every request there.
    return simulate(topology, get_policy("round-robin", topology), requests, arrivals).table
