"""The calls of `bench_large_body.py`: large prompt bodies, one streamed call checked end to
end, probe pairs, closed loops, the body-size limits of both doors, and the picker's own time
from its /metrics."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
import urllib.request
from typing import Any

import aiohttp
import orjson

from optimizer.emulator.text import trace_prompt
from optimizer.prompts import BLOCK_CHARS

# The doors' default body limits (console/settings.py), unless the environment sets them.
ROUTER_LIMIT = int(os.environ.get("LOCUS_ROUTER_MAX_BODY_BYTES", 16 * 1024 * 1024))
PICKER_LIMIT = int(os.environ.get("LOCUS_PICKER_MAX_BODY_BYTES", 16 * 1024 * 1024))


class Bodies:
    """Streamed /v1/completions bodies of `tokens` prompt tokens (4 characters each), usage
    asked, 1 token out; each prompt starts with its own number, so its first block, and so
    every block (their ids chain), differs from every other call's."""

    def __init__(self, model: str, tokens: int) -> None:
        blocks = -(-tokens * 4 // BLOCK_CHARS)
        text = trace_prompt(list(range(1, blocks + 1)), tokens)
        head = {"model": model, "max_tokens": 1, "stream": True}
        head["stream_options"] = {"include_usage": True}
        encoded = orjson.dumps({**head, "prompt": "@" * 12 + text[12:]})
        self._head, _, self._tail = encoded.partition(b"@" * 12)
        self._numbers = itertools.count()
        self.tokens = tokens

    def next(self) -> bytes:
        return self._head + b"%012d" % next(self._numbers) + self._tail


async def one_call(
    session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str], tokens: int
) -> tuple[float, str]:
    """(seconds to the first streamed event, the node that answered); raises unless the
    answer is 200 and its usage counts `tokens` prompt tokens (the body arrived whole)."""
    began = time.perf_counter()
    sent = {**headers, "content-type": "application/json"}
    async with session.post(url, data=body, headers=sent) as answer:
        if answer.status != 200:
            raise RuntimeError(f"{url} answered {answer.status}: {await answer.text()}")
        first, counted = None, None
        async for line in answer.content:
            if line.startswith(b"data: {"):
                first = first if first is not None else time.perf_counter() - began
                if b'"prompt_tokens"' in line:
                    counted = orjson.loads(line[6:])["usage"]["prompt_tokens"]
        if first is None or counted != tokens:
            raise RuntimeError(f"{url}: {counted} prompt tokens counted, {tokens} sent")
        return first, answer.headers.get("x-locus-node", "")


async def probe_pairs(
    session: aiohttp.ClientSession,
    router: str,
    nodes: dict[str, str],
    headers: dict[str, str],
    bodies: Bodies,
    count: int,
) -> list[tuple[float, float]]:
    """(through the router, straight to the node it picked) TTFTs, one call at a time."""
    pairs = []
    for _ in range(count):
        through, node = await one_call(session, router, bodies.next(), headers, bodies.tokens)
        direct, _ = await one_call(
            session, nodes[node] + "/v1/completions", bodies.next(), headers, bodies.tokens
        )
        pairs.append((through, direct))
    return pairs


async def closed_loop(
    session: aiohttp.ClientSession,
    urls: list[str],
    headers: dict[str, str],
    bodies: Bodies,
    concurrency: int,
    seconds: float,
) -> dict[str, Any]:
    """`concurrency` callers back to back for `seconds`, over `urls` in turn: req/s (calls
    over the time to the last answer) and TTFT p50/p99 in ms."""
    from bench_router import spread

    ttfts: list[float] = []
    stop = time.monotonic() + seconds

    async def caller(index: int) -> None:
        turn = index
        while time.monotonic() < stop:
            url = urls[turn % len(urls)]
            turn += 1
            first, _ = await one_call(session, url, bodies.next(), headers, bodies.tokens)
            ttfts.append(first * 1000)

    began = time.monotonic()
    await asyncio.gather(*(caller(i) for i in range(concurrency)))
    return {"rps": len(ttfts) / (time.monotonic() - began), "ttft_ms": spread(ttfts)}


def _exact(model: str, size: int) -> bytes:
    """A completions body of exactly `size` bytes."""
    head, tail = b'{"model":"%s","max_tokens":1,"prompt":"' % model.encode(), b'"}'
    filler = size - len(head) - len(tail)
    return head + (b"word " * (filler // 5 + 1))[:filler] + tail


async def router_limits(base: str, headers: dict[str, str], model: str) -> dict[str, Any]:
    """The router's answers to a body one byte over its limit and to one exactly at it."""
    out: dict[str, Any] = {"limit_bytes": ROUTER_LIMIT}
    async with aiohttp.ClientSession() as session:
        for name, size in (("over", ROUTER_LIMIT + 1), ("at", ROUTER_LIMIT)):
            body = _exact(model, size)
            try:
                async with session.post(
                    base + "/v1/completions", data=body, headers=headers
                ) as answer:
                    text = await answer.text()
                    node = answer.headers.get("x-locus-node")
                    out[name] = {"status": answer.status, "node": node, "message": text[:160]}
            except aiohttp.ClientError as exc:  # the router may close before reading it all
                out[name] = {"status": None, "error": repr(exc)[:160]}
    return out


def picker_limits(port: int, model: str, chunk: int) -> dict[str, Any]:
    """The picker's first answer to a body one byte over its limit and to one exactly at it,
    sent in `chunk`-byte chunks; and to a 5 MiB body in one message, which only an Envoy
    buffering the whole body would send (grpcio's own per-message limit is 4 MiB)."""
    import grpc
    from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ep_grpc
    from picker_load import request_messages

    out: dict[str, Any] = {"limit_bytes": PICKER_LIMIT}
    cases = (("over", PICKER_LIMIT + 1, chunk), ("at", PICKER_LIMIT, chunk))
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = ep_grpc.ExternalProcessorStub(channel)
        for name, size, part in (*cases, ("one_5mib_message", 5 * 1024 * 1024, 0)):
            messages = request_messages("/v1/completions", _exact(model, size), part)
            answers = stub.Process(iter(messages), timeout=60)
            try:
                first = next(answers)
            except grpc.RpcError as exc:
                out[name] = {"status": None, "grpc": exc.code().name}
                continue
            answers.cancel()
            kind = first.WhichOneof("response")
            if kind == "immediate_response":
                status = int(first.immediate_response.status.code)
                message = first.immediate_response.body[:160].decode()
                out[name] = {"status": status, "message": message}
            else:
                out[name] = {"status": 200, "answer": kind}
    return out


def picker_seconds(port: int) -> tuple[float, float]:
    """(seconds, requests) of locus_picker_seconds from the picker's /metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    found: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("locus_picker_seconds_sum", "locus_picker_seconds_count"):
            found[name.rpartition("_")[2]] = float(value)
    return found["sum"], found["count"]
