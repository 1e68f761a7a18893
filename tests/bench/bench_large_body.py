"""What a large request body costs Locus's router and endpoint picker, beside llm-d's figure.

    .venv/bin/python tests/bench/bench_large_body.py [--tokens 55000,100000]
        [--concurrency 1,8,32] [--streams 1,8] [--seconds 5] [--pairs 30] [--chunk 32768]
        [--runs router,picker,limits] [--port-base 24000] [--quick] [--json PATH]

The envelope to sit beside (llm-d/llm-d-router issue #1109, "Long-context requests see >1s
TTFT overhead in EPP request path", 2026-05-14): streamed `/v1/completions` with a ~220 KB
prompt through an Istio gateway and llm-d's endpoint picker (EPP) to `llm-d-inference-sim`
pods, whose answers are almost instant; throughput plateaus at ~128-132 req/s while TTFT grows
with concurrency (TTFT p50 152.62 ms at 20 concurrent requests, 121.74 req/s; 1516.71 ms at
200, 129.16 req/s). Its follow-up counted ~7.17 body chunks of a ~220,069-byte body per request
at the EPP, so Envoy streamed the body in chunks of about 30 KB (`--chunk`).

Sizes: a prompt of N tokens is 4N characters of `optimizer/emulator/text.py`'s filler (4
characters a token is the rule of `optimizer/prompts.py`, by which the emulated nodes, the
router and the picker all count), so 100,000 tokens is a ~400 KB JSON body and llm-d's 220 KB
is ~55,000 tokens. Each call's prompt starts with its own number, so no two share a block.

- router: `serve-fleet` on an instant fleet written here (4 nodes that prefill 10^9 tokens/s,
  decode a token in 1 ms, no network time: the part `llm-d-inference-sim` plays in llm-d's
  figure) and `run_router` as `bench_router.py` starts it (weighted-score, its scraper). Calls
  are streamed, 1 token out, usage asked, and every answer's `usage.prompt_tokens` must equal
  the size sent (the body reached the node whole). Per size: `--pairs` probe pairs one after
  the other (through the router, then straight to the node it picked): the added TTFT p50/p99;
  then per `--concurrency` a closed loop of `--seconds` through the router and one straight to
  the nodes (round robin): req/s and TTFT p50/p99; the router's CPU per call and its own parse
  and decide time (`locus_router_overhead_seconds`).
- picker: `run_picker` (one process, the demo fleet, SQLite) driven as Envoy drives it with
  `request_body_mode: FULL_DUPLEX_STREAMED`, the mode the picker speaks (docs/gateway.md):
  headers, the body in `--chunk`-byte chunks, the headers answer and the body echoed
  (`picker_load.py`). Per size and `--streams`: req/s, the client's time per request p50/p99,
  the server's CPU per request and the picker's own time (`locus_picker_seconds`, from the last
  chunk to its answer).
- limits: at the default body limits (16 MiB): a body one byte over is refused 413 by each
  door; a body of exactly the limit gets past each door's size check.

Prints figures and asserts only that every answer was right; `--json PATH` writes them for
docs/results/ (tools/results/serving.py, `large_body`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_router import router_overhead, spread  # noqa: E402
from large_body import (  # noqa: E402
    Bodies,
    closed_loop,
    one_call,
    picker_limits,
    picker_seconds,
    probe_pairs,
    router_limits,
)
from picker_load import load  # noqa: E402
from routers import fleet as fleets  # noqa: E402
from routers.locus import locus  # noqa: E402
from routers.peers import FleetTarget  # noqa: E402
from servers import grpc_ready, loadavg, process, scratch_server_env, tree_cpu_s  # noqa: E402

from optimizer.topology_files import load_topology  # noqa: E402

DEMO = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"
MODEL = "llama-3.1-8b"
# The instant fleet: answers as fast as llm-d-inference-sim's, so the figures are the doors'.
INSTANT: dict[str, Any] = {
    "version": 1,
    "sites": [{"name": "dc", "tier": "regional", "region": "eu", "jurisdiction": "EU"}],
    "intra_site_rtt_ms": 0,
    "accelerators": [{"name": "sim", "memory_gib": 80}],
    "models": [{"name": MODEL, "memory_gib": 1, "kv_bytes_per_token": 1000}],
    "profiles": [
        {
            "model": MODEL,
            "accelerator": "sim",
            "prefill_tokens_per_s": 1e9,
            "decode_step_ms": 1,
            "decode_step_ms_per_seq": 0.001,
            "max_batch": 1024,
        }
    ],  # fmt: skip
    "nodes": [
        {
            "name": f"sim-{i}",
            "site": "dc",
            "accelerator": "sim",
            "usd_per_hour": 1.0,
            "models": [MODEL],
        }
        for i in range(1, 5)
    ],  # fmt: skip
    "sources": [{"name": "gw", "site": "dc", "share": 1.0, "slo": "chat"}],
    "slos": [{"name": "chat", "ttft_p95_ms": 5000, "e2e_p95_ms": 30000}],
}


def _router(args: argparse.Namespace, work: Path, report: dict[str, Any]) -> None:
    topology_file = work / "instant-fleet.yaml"
    topology_file.write_text(yaml.safe_dump(INSTANT))
    topology = load_topology(topology_file)
    served = fleets.start_fleet(
        topology_file, topology, args.port_base, sys.executable, work / "fleet.log"
    )
    running = None
    try:
        workers = fleets.workers_by_model(topology, served.urls)
        running = locus("weighted-score")(
            workers,
            args.port_base + 40,
            work,
            FleetTarget(topology_file, served.urls, served.source),
        )
        fleets.wait_ready(running.urls, running.api_key, timeout_s=120)
        base = running.urls[MODEL]
        headers = {"Authorization": f"Bearer {running.api_key}", "x-locus-source": "gw"}
        rows = []
        for tokens in args.tokens:
            cpu0, (spent0, calls0) = tree_cpu_s(running.pids[0]), router_overhead(base)
            row = asyncio.run(_router_size(args, base, served.urls, headers, tokens))
            cpu1, (spent1, calls1) = tree_cpu_s(running.pids[0]), router_overhead(base)
            calls = calls1 - calls0
            row["router_cpu_ms_per_call"] = (cpu1 - cpu0) / calls * 1000
            row["decision_path_ms_mean"] = (spent1 - spent0) / calls * 1000
            rows.append(row)
            _print_router(row)
        report["router"] = rows
        if args.limits:
            report["router_limits"] = asyncio.run(router_limits(base, headers, MODEL))
            print("router limits:", json.dumps(report["router_limits"]))
    finally:
        if running is not None:
            running.stop()
        served.stop()


async def _router_size(
    args: argparse.Namespace,
    base: str,
    nodes: dict[str, str],
    headers: dict[str, str],
    tokens: int,
) -> dict[str, Any]:
    bodies = Bodies(MODEL, tokens)
    router = base + "/v1/completions"
    direct = [url + "/v1/completions" for url in nodes.values()]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        for _ in range(3):  # connections open, code paths warm
            await one_call(session, router, bodies.next(), headers, tokens)
        pairs = await probe_pairs(session, router, nodes, headers, bodies, args.pairs)
        levels = []
        for concurrency in args.concurrency:
            through = await closed_loop(
                session, [router], headers, bodies, concurrency, args.seconds
            )
            straight = await closed_loop(
                session, direct, headers, bodies, concurrency, args.seconds
            )
            levels.append({"concurrency": concurrency, "router": through, "direct": straight})
    added = [(t - d) * 1000 for t, d in pairs]
    return {
        "tokens": tokens,
        "body_bytes": len(bodies.next()),
        "pairs": len(pairs),
        "added_ttft_ms": spread(added),
        "router_ttft_ms": spread([t * 1000 for t, _ in pairs]),
        "direct_ttft_ms": spread([d * 1000 for _, d in pairs]),
        "levels": levels,
    }


def _picker(args: argparse.Namespace, report: dict[str, Any]) -> None:
    env, key = scratch_server_env(DEMO)
    port, health, metrics = (args.port_base + 50 + i for i in range(3))
    manage = [sys.executable, str(REPO / "manage.py")]
    picker = [*manage, "run_picker", "--port", str(port), "--health-port", str(health)]
    picker += ["--source", "munich-app", "--metrics-port", str(metrics)]
    rows = []
    with process(picker, env, lambda: grpc_ready(health)) as pid:
        for tokens in args.tokens:
            body = Bodies(MODEL, tokens).next()
            large = ("/v1/completions", body, args.chunk)
            load("picker", port, key, full=False, streams=1, clients=1, seconds=1, large=large)
            levels = []
            for streams in args.streams:
                cpu0, (spent0, calls0) = tree_cpu_s(pid), picker_seconds(metrics)
                shape = {"streams": streams, "clients": 1, "seconds": args.seconds}
                figures = load("picker", port, key, full=False, large=large, **shape)
                cpu1, (spent1, calls1) = tree_cpu_s(pid), picker_seconds(metrics)
                calls = calls1 - calls0
                figures["server_cpu_us"] = (cpu1 - cpu0) / calls * 1e6
                figures["picker_ms_mean"] = (spent1 - spent0) / calls * 1000
                levels.append({"streams": streams, **figures})
            chunks = -(-len(body) // args.chunk) if args.chunk else 1
            row = {"tokens": tokens, "body_bytes": len(body), "chunks": chunks, "levels": levels}
            rows.append(row)
            _print_picker(row)
        report["picker"] = rows
        if args.limits:
            report["picker_limits"] = picker_limits(port, MODEL, args.chunk)
            print("picker limits:", json.dumps(report["picker_limits"]))


def _print_router(row: dict[str, Any]) -> None:
    added, through, direct = row["added_ttft_ms"], row["router_ttft_ms"], row["direct_ttft_ms"]
    print(
        f"router, {row['tokens']:,} tokens ({row['body_bytes']:,} bytes): {row['pairs']} pairs, "
        f"added TTFT p50 {added['p50']:.1f} / p99 {added['p99']:.1f} ms (through "
        f"{through['p50']:.1f} / {through['p99']:.1f}, direct {direct['p50']:.1f} / "
        f"{direct['p99']:.1f}); router CPU {row['router_cpu_ms_per_call']:.2f} ms/call, parse + "
        f"decide {row['decision_path_ms_mean']:.2f} ms"
    )
    for level in row["levels"]:
        r, d = level["router"], level["direct"]
        print(
            f"  concurrency {level['concurrency']:>3}: through the router {r['rps']:6.1f} req/s, "
            f"TTFT p50 {r['ttft_ms']['p50']:7.1f} p99 {r['ttft_ms']['p99']:7.1f} ms | direct "
            f"{d['rps']:6.1f} req/s, TTFT p50 {d['ttft_ms']['p50']:7.1f} p99 "
            f"{d['ttft_ms']['p99']:7.1f} ms"
        )


def _print_picker(row: dict[str, Any]) -> None:
    print(
        f"picker, {row['tokens']:,} tokens ({row['body_bytes']:,} bytes in {row['chunks']} chunks):"
    )
    for level in row["levels"]:
        print(
            f"  streams {level['streams']:>3}: {level['rps']:6.1f} req/s, per request p50 "
            f"{level['p50_ms']:6.2f} p99 {level['p99_ms']:6.2f} ms, server CPU "
            f"{level['server_cpu_us'] / 1000:.2f} ms, picker's own "
            f"{level['picker_ms_mean']:.2f} ms, client CPU {level['client_cpu_us'] / 1000:.2f} ms"
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ints = lambda text: [int(x) for x in text.split(",")]  # noqa: E731
    p.add_argument("--tokens", type=ints, default=[55_000, 100_000], help="prompt sizes")
    p.add_argument("--concurrency", type=ints, default=[1, 8, 32], help="router loops")
    p.add_argument("--streams", type=ints, default=[1, 8], help="picker loops")
    p.add_argument("--seconds", type=float, default=5.0, help="each closed loop")
    p.add_argument("--pairs", type=int, default=30, help="router probe pairs per size")
    p.add_argument("--chunk", type=int, default=32_768, help="picker body chunk bytes")
    p.add_argument(
        "--runs", default="router,picker,limits", help="limits: checked on the doors run"
    )
    p.add_argument("--port-base", type=int, default=24000)
    p.add_argument("--quick", action="store_true", help="100,000 tokens, 2 s loops, 10 pairs")
    p.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = p.parse_args()
    if args.quick:
        args.tokens, args.seconds, args.pairs = [100_000], 2.0, 10
        args.concurrency, args.streams = [1, 8], [1, 4]
    runs = set(args.runs.split(","))
    args.limits = "limits" in runs
    work = REPO / "var" / "bench" / "large-body"
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "cores": os.cpu_count(),
        "load_average": {"before": loadavg()},
        "seconds": args.seconds,
        "chunk_bytes": args.chunk,
    }
    began = time.monotonic()
    if "router" in runs:
        _router(args, work, report)
    if "picker" in runs:
        _picker(args, report)
    report["load_average"]["after"] = loadavg()
    print(f"{time.monotonic() - began:.0f} s; load average {report['load_average']}")
    if args.json is not None:
        args.json.write_text(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
