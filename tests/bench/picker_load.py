"""The endpoint-picker benchmark's load (bench_picker.py): the same prompt as a REST placements
body and as Envoy's ext_proc messages, driven by client processes in closed or open loop, or
by h2load (h2load_driver.py)."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import time
from collections.abc import Awaitable, Callable
from typing import Any

from optimizer.prompts import chat_text, prompt_blocks

MESSAGES = [
    {"role": "system", "content": "You are a concise travel assistant. " * 60},
    {"role": "user", "content": "Fastest train from Munich to Amsterdam tomorrow morning?"},
]
CHAT = {"model": "llama-3.1-8b", "messages": MESSAGES, "max_tokens": 256}
_tokens, _hashes = prompt_blocks(chat_text(MESSAGES))
REST = {
    "model": "llama-3.1-8b",
    "source": "munich-app",
    "prompt_tokens": _tokens,
    "max_output_tokens": 256,
    "prefix_hashes": list(_hashes),
}


def _rest_client(port: int, key: str) -> Callable[[], Awaitable[Callable[[], Awaitable[None]]]]:
    body = json.dumps(REST).encode()
    head = (
        f"POST /api/v1/placements HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()

    async def connect() -> Callable[[], Awaitable[None]]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def one() -> None:
            writer.write(head + body)
            status = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            if b" 200 " not in status:
                raise RuntimeError(f"REST answered {status!r}")

        return one

    return connect


def request_messages(path: str, body: bytes, chunk: int) -> list[Any]:
    """Envoy's request path for one HTTP request: its headers, then `body` in `chunk`-byte
    pieces (one piece when 0), the last with `end_of_stream`."""
    from envoy.config.core.v3 import base_pb2
    from envoy.service.ext_proc.v3 import external_processor_pb2 as ep

    pairs = {":method": "POST", ":path": path}
    headers = [base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in pairs.items()]
    parts = [body[i : i + chunk] for i in range(0, len(body), chunk)] if chunk else [body]
    return [
        ep.ProcessingRequest(
            request_headers=ep.HttpHeaders(headers=base_pb2.HeaderMap(headers=headers))
        ),
        *(
            ep.ProcessingRequest(
                request_body=ep.HttpBody(body=part, end_of_stream=i == len(parts) - 1)
            )
            for i, part in enumerate(parts)
        ),
    ]


# A request of another shape for the picker: (path, body, chunk bytes), the body sent in chunks
# of that size as Envoy streams a large one (0: one chunk). bench_large_body.py sends these.
Large = tuple[str, bytes, int]


def _picker_client(
    port: int, full: bool, large: Large | None = None
) -> Callable[[], Awaitable[Callable[[], Awaitable[None]]]]:
    import grpc
    from envoy.config.core.v3 import base_pb2
    from envoy.service.ext_proc.v3 import external_processor_pb2 as ep
    from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ep_grpc

    def headers(pairs: dict[str, str]) -> base_pb2.HeaderMap:
        return base_pb2.HeaderMap(
            headers=[base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in pairs.items()]
        )

    request = request_messages(*(large or ("/v1/chat/completions", json.dumps(CHAT).encode(), 0)))
    parts = request[1:]
    response = [
        ep.ProcessingRequest(response_headers=ep.HttpHeaders(headers=headers({":status": "200"}))),
        ep.ProcessingRequest(response_body=ep.HttpBody(body=b'{"ok":1}', end_of_stream=True)),
    ]

    async def connect() -> Callable[[], Awaitable[None]]:
        # A connection of its own (channels share one by default), as each REST worker has.
        channel = grpc.aio.insecure_channel(
            f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
        )
        stub = ep_grpc.ExternalProcessorStub(channel)

        async def one() -> None:
            call = stub.Process()
            for message in request:
                await call.write(message)
            answer = await call.read()
            if answer.WhichOneof("response") != "request_headers":
                raise RuntimeError(f"picker answered {answer}")
            for _ in parts:  # the body, echoed in the chunks it came in
                await call.read()
            if full:
                for message in response:
                    await call.write(message)
                await call.read()
                await call.read()
            await call.done_writing()
            await call.read()  # end of stream

        return one

    return connect


# -- the load loop (runs in each client process) ---------------------------------------------


async def _drive(
    connect: Callable[[], Awaitable[Callable[[], Awaitable[None]]]],
    streams: int,
    seconds: float,
    rate: float | None,
) -> tuple[int, list[float]]:
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def worker(index: int) -> None:
        one = await connect()
        interval = None if rate is None else streams / rate
        next_at = time.perf_counter() + (0 if interval is None else interval * index / streams)
        while True:
            if interval is not None:
                delay = next_at - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                next_at += interval
            start = time.perf_counter()
            if start >= stop:
                return
            await one()
            latencies.append(time.perf_counter() - start)

    await asyncio.gather(*(worker(i) for i in range(streams)))
    return len(latencies), latencies


def _client(
    args: tuple[str, int, str, bool, int, float, float | None, float, Large | None],
) -> tuple[list[float], float]:
    kind, port, key, full, streams, seconds, rate, start_at, large = args
    connect = _rest_client(port, key) if kind == "rest" else _picker_client(port, full, large)
    time.sleep(max(0.0, start_at - time.time()))
    cpu = time.process_time()
    _, latencies = asyncio.run(_drive(connect, streams, seconds, rate))
    return latencies, time.process_time() - cpu


def load(
    kind: str,
    port: int,
    key: str,
    *,
    full: bool,
    streams: int,
    clients: int,
    seconds: float,
    rate: float | None = None,
    driver: str = "python",
    large: Large | None = None,
) -> dict[str, float]:
    if driver == "h2load":
        return _h2load(kind, port, key, streams, clients, seconds, rate)
    per_client = streams // clients
    start_at = time.time() + 1.0  # every client connects first, then all start together
    jobs = [
        (
            kind,
            port,
            key,
            full,
            per_client,
            seconds,
            None if rate is None else rate / clients,
            start_at,
            large,
        )
        for _ in range(clients)
    ]
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        results = pool.map(_client, jobs)
    latencies = sorted(x for r, _ in results for x in r)
    n = len(latencies)
    return {
        "rps": n / seconds,
        "p50_ms": latencies[n // 2] * 1000,
        "p99_ms": latencies[min(n - 1, int(n * 0.99))] * 1000,
        "client_cpu_us": sum(c for _, c in results) / n * 1e6,
    }


def _h2load(
    kind: str, port: int, key: str, streams: int, clients: int, seconds: float, rate: float | None
) -> dict[str, float]:
    import h2load_driver
    from envoy.config.core.v3 import base_pb2
    from envoy.service.ext_proc.v3 import external_processor_pb2 as ep

    chat = json.dumps(CHAT).encode()
    if kind == "rest":
        body, least = json.dumps(REST).encode(), 100
    else:
        pairs = {":method": "POST", ":path": "/v1/chat/completions"}
        headers = [base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in pairs.items()]
        messages = [
            ep.ProcessingRequest(
                request_headers=ep.HttpHeaders(headers=base_pb2.HeaderMap(headers=headers))
            ),
            ep.ProcessingRequest(request_body=ep.HttpBody(body=chat, end_of_stream=True)),
        ]
        body = h2load_driver.grpc_frames([m.SerializeToString() for m in messages])
        least = len(chat)  # the echoed body comes back with every answer
    return h2load_driver.load(
        kind,
        port,
        key,
        body,
        min_answer_bytes=least,
        streams=streams,
        clients=clients,
        seconds=seconds,
        rate=rate,
    )
