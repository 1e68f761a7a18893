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


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _run(
    args: argparse.Namespace, router: str, nodes: dict[str, str], key: str, source: str
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}", "x-locus-source": source}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        warm = [
            await _ttft(
                session,
                router,
                {"model": "llama-3.1-8b", "prompt": "warm", "max_tokens": 1, "stream": True},
                headers,
            )
            for _ in range(20)
        ]
        del warm
        stop = time.monotonic() + args.probes * 0.12 + 5
        background = asyncio.create_task(_background(session, router, headers, args.rate, stop))
        await asyncio.sleep(3)  # the load reaches its level
        pairs = await _probes(session, router, nodes, headers, args.probes)
        sent = await background
    added = [(t - d) * 1000 for t, d in pairs]
    return {
        "background_calls": sent,
        "probe_pairs": len(pairs),
        "added_ms": {
            "p50": _pct(added, 0.5),
            "p99": _pct(added, 0.99),
            "mean": statistics.fmean(added),
        },
        "router_ttft_ms": {
            "p50": _pct([t * 1000 for t, _ in pairs], 0.5),
            "p99": _pct([t * 1000 for t, _ in pairs], 0.99),
        },
        "direct_ttft_ms": {
            "p50": _pct([d * 1000 for _, d in pairs], 0.5),
            "p99": _pct([d * 1000 for _, d in pairs], 0.99),
        },
    }


def _overhead_us(metrics: str) -> dict[str, float]:
    """Mean of locus_router_overhead_seconds (µs) from the router's /metrics."""
    total = float(re.search(r"^locus_router_overhead_seconds_sum (\S+)$", metrics, re.M).group(1))  # type: ignore[union-attr]
    count = float(re.search(r"^locus_router_overhead_seconds_count (\S+)$", metrics, re.M).group(1))  # type: ignore[union-attr]
    return {"mean_us": total / count * 1e6, "calls": count}


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
        cpu0 = fleets.tree_cpu_s(running.pids[:1])
        import urllib.request

        before = _overhead_us(urllib.request.urlopen(router + "/metrics").read().decode())
        result = asyncio.run(
            _run(
                args,
                router + "/v1/completions",
                served.urls,
                running.api_key,
                served.source or topology.sources[0].name,
            )
        )
        cpu1 = fleets.tree_cpu_s(running.pids[:1])
        after = _overhead_us(urllib.request.urlopen(router + "/metrics").read().decode())
        calls = after["calls"] - before["calls"]
        result["router_cpu_us_per_call"] = (cpu1 - cpu0) / calls * 1e6
        result["decision_path_us_mean"] = (
            (after["mean_us"] * after["calls"]) - (before["mean_us"] * before["calls"])
        ) / calls
        result["rate_per_s"] = args.rate
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
