"""What the OpenAI-compatible router adds to a call's time to first token, at moderate load.

    .venv/bin/python tests/bench/bench_router.py [--rate 20] [--probes 300] [--policy P]
        [--topology T.yaml] [--port-base 23500] [--json]

Starts the emulated fleet (`serve-fleet`, its own process) and Locus's router as the router
benchmark starts it (`routers/locus.py`: `run_router` on a scratch database, a scraper beside
it). A background load of `--rate` streamed calls a second (Poisson arrivals, 2,000-token
prompts, 64 tokens out) goes through the router to keep it and the nodes busy. Meanwhile, ten
times a second, a probe pair: one small streamed call through the router, then the same call
straight to the node the router picked (its `x-locus-node`). Each call's prompt is unique and
shorter than a 512-token block, so neither gains from the other's prefix cache. Added latency
is the router's TTFT minus the direct one, per pair; the report gives its p50/p99 beside
both TTFTs, the router's CPU per call (its process tree, /proc) and its own decision time
(`locus_router_overhead_seconds`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from routers import fleet as fleets  # noqa: E402
from routers.locus import locus  # noqa: E402
from routers.peers import FleetTarget  # noqa: E402

from optimizer.topology_files import load_topology  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SINGLE_SITE = REPO / "optimizer" / "topologies" / "bench-single-site.yaml"
WORDS = ("alpha", "bravo", "delta", "echo", "golf", "hotel", "india", "kilo", "lima", "oscar")


def _text(rng: random.Random, tokens: int) -> str:
    """About `tokens` tokens (4 characters each, optimizer/prompts.py) of unique text."""
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < tokens * 4:
        words.append(rng.choice(WORDS) + str(rng.randrange(10**6)))
    return " ".join(words)


async def _ttft(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[float, str]:
    """Seconds to the first streamed event, and the node that answered."""
    began = time.perf_counter()
    async with session.post(url, json=body, headers=headers) as answer:
        assert answer.status == 200, await answer.text()
        node = answer.headers.get("x-locus-node", "")
        first = None
        async for line in answer.content:
            if first is None and line.startswith(b"data: "):
                first = time.perf_counter() - began
        assert first is not None
        return first, node


async def _background(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], rate: float, stop: float
) -> int:
    if rate <= 0:
        return 0
    rng = random.Random(1)
    calls: list[asyncio.Task[Any]] = []
    while time.monotonic() < stop:
        body = {"model": "llama-3.1-8b", "prompt": _text(rng, 2000), "max_tokens": 64}
        calls.append(asyncio.create_task(_ttft(session, url, {**body, "stream": True}, headers)))
        await asyncio.sleep(rng.expovariate(rate))
    await asyncio.gather(*calls)
    return len(calls)


async def _probes(
    session: aiohttp.ClientSession,
    router: str,
    nodes: dict[str, str],
    headers: dict[str, str],
    count: int,
) -> list[tuple[float, float]]:
    rng = random.Random(2)
    pairs = []
    for _ in range(count):
        body = {"model": "llama-3.1-8b", "max_tokens": 1, "stream": True}
        through, node = await _ttft(session, router, {**body, "prompt": _text(rng, 200)}, headers)
        source = {"x-locus-source": headers["x-locus-source"]}
        direct, _ = await _ttft(
            session, nodes[node] + "/v1/completions", {**body, "prompt": _text(rng, 200)}, source
        )
        pairs.append((through, direct))
        await asyncio.sleep(0.1)
    return pairs


def spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {f"p{q}": ordered[min(len(ordered) - 1, q * len(ordered) // 100)] for q in (50, 99)}


async def _run(
    args: argparse.Namespace, router: str, nodes: dict[str, str], key: str, source: str
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}", "x-locus-source": source}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        warm = {"model": "llama-3.1-8b", "prompt": "warm", "max_tokens": 1, "stream": True}
        for _ in range(20):  # connections open, code paths warm
            await _ttft(session, router, warm, headers)
        began = time.monotonic()
        stop = began + args.probes * 0.12 + 5
        background = asyncio.create_task(_background(session, router, headers, args.rate, stop))
        await asyncio.sleep(3)  # the load reaches its level
        pairs = await _probes(session, router, nodes, headers, args.probes)
        sent = await background
        elapsed = time.monotonic() - began
    added = [(t - d) * 1000 for t, d in pairs]
    return {
        "background_calls": sent,
        "background_calls_per_s": sent / elapsed,
        "probe_pairs": len(pairs),
        "added_ms": {**spread(added), "mean": statistics.fmean(added)},
        "router_ttft_ms": spread([t * 1000 for t, _ in pairs]),
        "direct_ttft_ms": spread([d * 1000 for _, d in pairs]),
    }


def router_overhead(router: str) -> tuple[float, float]:
    """(seconds, calls) of locus_router_overhead_seconds from the router's /metrics."""
    text = urllib.request.urlopen(router + "/metrics").read().decode()
    found = dict(re.findall(r"^locus_router_overhead_seconds_(sum|count) (\S+)$", text, re.M))
    return float(found["sum"]), float(found["count"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=20.0, help="background calls a second")
    p.add_argument("--probes", type=int, default=300)
    p.add_argument("--policy", default="weighted-score")
    p.add_argument("--topology", type=Path, default=SINGLE_SITE)
    p.add_argument("--port-base", type=int, default=23500)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    topology = load_topology(args.topology)
    work = REPO / "var" / "bench" / "router-overhead"
    work.mkdir(parents=True, exist_ok=True)
    served = fleets.start_fleet(
        args.topology, topology, args.port_base, sys.executable, work / "fleet.log"
    )
    running = None
    try:
        workers = fleets.workers_by_model(topology, served.urls)
        running = locus(args.policy)(
            workers,
            args.port_base + 40,
            work,
            FleetTarget(args.topology, served.urls, served.source),
        )
        fleets.wait_ready(running.urls, running.api_key, timeout_s=120)
        router = running.urls["llama-3.1-8b"]
        source = served.source or topology.sources[0].name
        cpu0, (spent0, calls0) = fleets.tree_cpu_s(running.pids[:1]), router_overhead(router)
        url = router + "/v1/completions"
        result = asyncio.run(_run(args, url, served.urls, running.api_key, source))
        cpu1, (spent1, calls1) = fleets.tree_cpu_s(running.pids[:1]), router_overhead(router)
        calls = calls1 - calls0
        result["router_cpu_us_per_call"] = (cpu1 - cpu0) / calls * 1e6
        result["decision_path_us_mean"] = (spent1 - spent0) / calls * 1e6
        result["offered_rate_per_s"] = args.rate
    finally:
        if running is not None:
            running.stop()
        served.stop()
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
