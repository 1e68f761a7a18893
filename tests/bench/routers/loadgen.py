"""Open-loop replay of a benchmark plan with the OpenAI client (runs in the bench venv).

    var/bench-venv/bin/python tests/bench/routers/loadgen.py --targets T.json
        [--plan P.jsonl --out R.jsonl] [--probes N --probes-out Q.jsonl] [--drain-s S]

No load generator on PyPI replays this workload (see README's router benchmark section):
guidellm 0.8.1 sends one model per run (`OpenAIHTTPBackend.default_model`), the same headers
on every request and records no response header; aiperf's Mooncake trace rows carry no model
or source. This replay sends each request at its planned time whatever happened to the
earlier ones (open loop), with its own model, `x-locus-source` header and prompt, streamed
(`stream_options.include_usage`), and records which node answered (`x-locus-node`, the
emulated node's name on every answer).

Times are taken from the planned send time, so a client that falls behind does not hide the
delay (coordinated omission): TTFT ends at the first streamed token, end-to-end at the end of
the stream. Requests still open `--drain-s` after the last planned send are cancelled and
recorded as unfinished.

`--probes N` first sends N pairs of tiny requests (a unique 16-token prompt, one output
token, not streamed): each through the router, then straight to the node the router picked;
the pair's time difference is the router's added latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from pathlib import Path
from typing import Any

import openai

# The HTTP stack the pinned openai client is built on: its 3.x releases moved from httpx to the
# httpx2 fork (same API), and the client's `http_client` must be of its own stack.
try:
    import httpx2 as httpx
except ImportError:  # an openai release still on httpx
    import httpx  # type: ignore[no-redef]

NODE_HEADER = "x-locus-node"
SOURCE_HEADER = "x-locus-source"
WARMUP_PAIRS = 3


def _client(base_url: str, timeout_s: float, api_key: str = "bench") -> openai.AsyncOpenAI:
    limits = httpx.Limits(max_connections=4096, max_keepalive_connections=512)
    return openai.AsyncOpenAI(
        base_url=f"{base_url}/v1",
        api_key=api_key,
        max_retries=0,
        timeout=timeout_s,
        http_client=httpx.AsyncClient(limits=limits, timeout=timeout_s),
    )


async def _one(
    client: openai.AsyncOpenAI, item: dict[str, Any], due: float, out: dict[str, Any]
) -> None:
    """Send one planned request at `due` (loop time) and fill `out` as it goes."""
    await asyncio.sleep(max(0.0, due - time.perf_counter()))
    out["lag_ms"] = (time.perf_counter() - due) * 1000
    headers = {SOURCE_HEADER: item["source"]} if item["source"] else {}
    try:
        async with client.completions.with_streaming_response.create(
            model=item["model"],
            prompt=item["prompt"],
            max_tokens=item["max_tokens"],
            stream=True,
            stream_options={"include_usage": True},
            extra_headers=headers,
        ) as response:
            out["status"] = response.http_response.status_code
            out["node"] = response.headers.get(NODE_HEADER)
            async for line in response.iter_lines():
                if not line.startswith("data: "):
                    continue
                payload = line[6:]
                if payload == "[DONE]":
                    break
                if (
                    "ttft_ms" not in out
                    and '"text":""' not in payload
                    and '"choices":[]' not in payload
                ):
                    out["ttft_ms"] = (time.perf_counter() - due) * 1000
                if '"usage"' in payload and '"choices":[]' in payload:
                    out["tokens"] = json.loads(payload)["usage"]["completion_tokens"]
            out["e2e_ms"] = (time.perf_counter() - due) * 1000
            out["ok"] = "tokens" in out
    except openai.APIStatusError as exc:
        out["status"] = exc.status_code
        out["node"] = exc.response.headers.get(NODE_HEADER)
        out["error"] = exc.message[:300]
    except (openai.APIConnectionError, openai.APITimeoutError, httpx.HTTPError) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:300]


async def _probe(
    router: dict[str, openai.AsyncOpenAI], nodes: dict[str, openai.AsyncOpenAI], n: int
) -> list[dict[str, Any]]:
    """Router-then-direct pairs of tiny requests (see the module docstring)."""
    models = sorted(router)
    pairs = []
    # Open a pooled connection to every node first, as the router holds one to each: a direct
    # call that had to connect would make the router look faster than it is.
    for client in nodes.values():
        await client.models.list()
    # The first pairs warm both ways up further; they are not kept.
    for k in range(-WARMUP_PAIRS, n):
        model = models[k % len(models)]
        # Unique text shorter than one 2048-character block: no prefix cache on either side.
        prompt = f"probe {k:+06d} " + "ab " * 18
        times = {}
        node = None
        for way in ("router", "direct"):
            client = router[model] if way == "router" else nodes.get(node or "")
            if client is None:
                break
            start = time.perf_counter()
            try:
                raw = await client.completions.with_raw_response.create(
                    model=model, prompt=prompt, max_tokens=1
                )
            except openai.APIStatusError:
                break  # e.g. a node the fleet's default source has no route to: no pair
            times[way] = (time.perf_counter() - start) * 1000
            node = node or raw.headers.get(NODE_HEADER)
        if len(times) == 2 and k >= 0:
            pairs.append({"model": model, "node": node, **times})
        await asyncio.sleep(0.02)
    return pairs


async def run(args: argparse.Namespace) -> dict[str, Any]:
    targets = json.loads(Path(args.targets).read_text())
    lines = Path(args.plan).read_text().splitlines() if args.plan else []
    plan = [json.loads(line) for line in lines if line]
    horizon = (plan[-1]["at_s"] if plan else 0.0) + args.drain_s + 30
    key = targets.get("api_key", "bench")
    router = {m: _client(url, horizon, key) for m, url in targets["models"].items()}
    nodes = {n: _client(url, 30) for n, url in targets["nodes"].items()}
    probes = await _probe(router, nodes, args.probes) if args.probes else []
    if args.probes_out:
        Path(args.probes_out).write_text("".join(json.dumps(p) + "\n" for p in probes))
    results: list[dict[str, Any]] = [{"i": item["i"]} for item in plan]
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter() + 0.5
    started = time.time() + 0.5
    tasks = [
        asyncio.create_task(_one(router[item["model"]], item, start + item["at_s"], out))
        for item, out in zip(plan, results, strict=True)
    ]
    deadline = start + (plan[-1]["at_s"] if plan else 0.0) + args.drain_s
    pending: set[asyncio.Task[None]] = set()
    if tasks:
        _, pending = await asyncio.wait(tasks, timeout=max(0.0, deadline - time.perf_counter()))
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    for client in (*router.values(), *nodes.values()):
        await client.close()
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in results))
    return {
        "started_unix": started,
        "requests": len(plan),
        "unfinished": len(pending),
        "client_cpu_s": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", default=None, help="JSONL plan (none: probes only)")
    parser.add_argument(
        "--targets", required=True, help='{"models": {M: URL}, "nodes": {N: URL}, "api_key": K}'
    )
    parser.add_argument("--out", default=None)
    parser.add_argument("--probes", type=int, default=0)
    parser.add_argument("--probes-out", default=None)
    parser.add_argument("--drain-s", type=float, default=60.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))), flush=True)


if __name__ == "__main__":
    main()
