"""The emulator's own timing error: TTFT and end-to-end latency as a client measures them,
against the node model's, at low and moderate load; and its agreement with the simulator.

    .venv/bin/python tests/bench/bench_emulator.py [--seconds 20] [--loads 0.1,0.6]
        [--replays 3]

Starts `python -m optimizer serve-fleet --requests-out FILE` (a subprocess, one node 10 ms of
RTT away from the source), drives it open loop (Poisson arrivals, streamed completions of
512-4096 prompt tokens and 32 output tokens, at each load as a share of the node's prefill
capacity) with aiohttp from this process, then pairs each request with the model's record of
it (by its first block id) and prints the client's minus the model's times. The client shares
the machine's two cores with the server, as a router or load generator would; how late a
plain `asyncio.sleep` wakes on this machine in the same minute is printed beside, as the floor.

Then `--replays` times the replay of tests/optimizer/emulator/replay.py (60 Mooncake requests
at 6x, client and server on one loop) against the simulator: per-request relative TTFT error
of the client's measure against the simulator on the trace's arrival times, and of the
emulator's model against the simulator on the arrival times the emulator really saw.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp

from optimizer.emulator import trace_prompt
from optimizer.prompts import prompt_blocks
from tests.optimizer.emulator.client import Timed, stream

REPO = Path(__file__).resolve().parents[2]
PREFILL_TOKENS_PER_S = 20000
TOPOLOGY = f"""
version: 1
sites:
  - {{name: edge, tier: edge, region: r, jurisdiction: EU}}
  - {{name: dc, tier: regional, region: r, jurisdiction: EU}}
links:
  - {{a: edge, b: dc, rtt_ms: 10, bandwidth_gbps: 10, egress_usd_per_gb: 0.01}}
accelerators: [{{name: gpu, memory_gib: 80}}]
models: [{{name: m, memory_gib: 16, kv_bytes_per_token: 1024}}]
profiles:
  - {{model: m, accelerator: gpu, prefill_tokens_per_s: {PREFILL_TOKENS_PER_S},
     decode_step_ms: 10, decode_step_ms_per_seq: 0.2, max_batch: 64}}
nodes:
  - {{name: n1, site: dc, accelerator: gpu, gpus: 1, usd_per_hour: 2, models: [m]}}
sources: [{{name: app, site: edge, share: 1, slo: s}}]
slos: [{{name: s, ttft_p95_ms: 1000, e2e_p95_ms: 10000}}]
workload: {{models: [{{name: m, share: 1}}]}}
"""


def _quantiles(values: list[float]) -> str:
    ordered = sorted(values)

    def q(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    return (
        f"median {statistics.median(ordered):+.2f}  p90 {q(0.9):+.2f}  p99 {q(0.99):+.2f}  "
        f"max {ordered[-1]:+.2f}"
    )


async def _drive(url: str, rate: float, seconds: float, seed: int) -> list[tuple[int, Timed]]:
    rng = random.Random(seed)
    out: list[tuple[int, Timed]] = []
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=120)
    ) as session:

        async def one(length: int) -> None:
            text = trace_prompt([rng.getrandbits(62)], length)
            body = {"model": "m", "prompt": text, "max_tokens": 32}
            timed = await stream(session, url, body, {"x-locus-source": "app"})
            out.append((prompt_blocks(text)[1][0], timed))

        tasks = []
        loop = asyncio.get_running_loop()
        start = loop.time()
        at = 0.0
        while at < seconds:
            await asyncio.sleep(max(0.0, start + at - loop.time()))
            tasks.append(asyncio.create_task(one(rng.randint(512, 4096))))
            at += rng.expovariate(rate)
        await asyncio.gather(*tasks)
    return out


async def _sleep_lateness(n: int = 300) -> list[float]:
    loop = asyncio.get_running_loop()
    late = []
    for _ in range(n):
        target = loop.time() + 0.0053
        await asyncio.sleep(0.0053)
        late.append((loop.time() - target) * 1000)
    return late


def _replays(count: int) -> None:
    from tests.optimizer.emulator.replay import replay

    for _ in range(count):
        pairs = replay(requests=60, load=6.0, max_output=32, real_time=True)
        client = [abs(p.client - p.simulator) / p.simulator for p in pairs]
        model = [abs(p.emulator - p.resimulated) / p.resimulated for p in pairs]
        absolute = [abs(p.client - p.simulator) * 1000 for p in pairs]
        print(
            f"replay: client vs simulator relative TTFT error median "
            f"{statistics.median(client):.3f} p90 {sorted(client)[54]:.3f} (absolute ms "
            f"median {statistics.median(absolute):.1f}); model vs simulator max {max(model):.1e}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--loads", default="0.1,0.6", help="shares of the prefill capacity")
    parser.add_argument("--replays", type=int, default=3, help="emulator-vs-simulator replays")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        topology = Path(tmp) / "t.yaml"
        topology.write_text(TOPOLOGY)
        observations = Path(tmp) / "obs.jsonl"
        server = subprocess.Popen(  # noqa: S603 - this interpreter and fixed arguments
            [sys.executable, "-m", "optimizer", "serve-fleet", "--topology", str(topology),
             "--port-base", "0", "--requests-out", str(observations)],
            cwd=REPO, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert server.stdout is not None
        url = server.stdout.readline().split()[1] + "/v1/completions"
        server.stdout.readline()  # "... nodes ready"
        try:
            mean_prompt = (512 + 4096) / 2
            for i, load in enumerate(float(x) for x in args.loads.split(",")):
                rate = load * PREFILL_TOKENS_PER_S / mean_prompt
                timed = asyncio.run(_drive(url, rate, args.seconds, seed=i))
                model = {}
                for line in observations.read_text().splitlines():
                    record = json.loads(line)
                    model[record["hash_ids"][0]] = record
                ttft = [(t.ttft * 1000 - model[k]["ttft_ms"]) for k, t in timed]
                assert all(t.done is not None for _, t in timed)
                e2e = [((t.token_times[-1] - t.sent) * 1000 - model[k]["e2e_ms"]) for k, t in timed]
                model_ttft = statistics.median(model[k]["ttft_ms"] for k, _ in timed)
                floor = asyncio.run(_sleep_lateness())
                print(
                    f"load {load:.2f} ({rate:.2f} req/s, {len(timed)} requests, model TTFT "
                    f"median {model_ttft:.1f} ms)\n  TTFT error ms: {_quantiles(ttft)}\n"
                    f"  E2E error ms:  {_quantiles(e2e)}\n"
                    f"  asyncio.sleep lateness ms (floor): {_quantiles(floor)}"
                )
        finally:
            server.send_signal(2)
            print(f"serve-fleet exited with {server.wait(timeout=10)}")
    _replays(args.replays)


if __name__ == "__main__":
    main()
