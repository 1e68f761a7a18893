"""Benchmark of the Envoy endpoint picker (ext_proc) beside the REST decision fast path.

    .venv/bin/python tests/bench/bench_picker.py [--seconds 10] [--streams 16] [--clients 2]
        [--processes 1] [--full] [--runs rest,picker,echo]

Sets up a scratch database with the demo fleet (26 nodes, every one with an address), then
measures, one server at a time, with the same kind of load loop for both:

1. REST: `POST /api/v1/placements` on uvicorn (`--workers` = `--processes`, the ASGI fast
   path), driven by keep-alive HTTP/1.1 connections written on raw asyncio streams, one
   connection per concurrent request;
2. ext_proc: `manage.py run_picker --processes N`, driven by grpcio (`grpc.aio`) as Envoy
   drives it: one stream per request, request headers, the body with `end_of_stream`, the
   headers answer and the echoed body read back, then the stream closed (`--full` adds the
   response path: response headers and a body, echoed, and the outcome recorded); one HTTP/2
   connection per concurrent request, as on the REST side (so SO_REUSEPORT can spread them);
3. the floor of ext_proc in Python: `echo_picker.py` (N of them on one port), a grpcio
   servicer that answers the same messages without deciding (grpcio's stream on its own);

each first at its maximum (closed loop, `--streams` concurrent requests spread over
`--clients` client processes), then open loop at half that maximum (each stream starts on
its own ticker, as `hey -q` does) for the latency. The two request bodies are the same
prompt: the OpenAI chat body the gateway reads and the REST body a caller hashing that
prompt with optimizer/prompts.py would send.

Goals (issue #16, 2 cores): ext_proc p99 < 5 ms at half its maximum; ext_proc decisions/s at
least 80% of the REST path's. Prints figures, asserts nothing: the clients share the
machine's two cores with the server, so each row also gives the server's and the clients'
CPU time per request (all processes of each side).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from optimizer.prompts import chat_text, prompt_blocks  # noqa: E402

FLEET = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- one request of each kind ---------------------------------------------------------------


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


def _picker_client(port: int, full: bool) -> Callable[[], Awaitable[Callable[[], Awaitable[None]]]]:
    import grpc
    from envoy.config.core.v3 import base_pb2
    from envoy.service.ext_proc.v3 import external_processor_pb2 as ep
    from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ep_grpc

    def headers(pairs: dict[str, str]) -> base_pb2.HeaderMap:
        return base_pb2.HeaderMap(
            headers=[base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in pairs.items()]
        )

    body = json.dumps(CHAT).encode()
    request = [
        ep.ProcessingRequest(
            request_headers=ep.HttpHeaders(
                headers=headers({":method": "POST", ":path": "/v1/chat/completions"})
            )
        ),
        ep.ProcessingRequest(request_body=ep.HttpBody(body=body, end_of_stream=True)),
    ]
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
            await call.read()  # the body, echoed
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
    args: tuple[str, int, str, bool, int, float, float | None, float],
) -> tuple[list[float], float]:
    kind, port, key, full, streams, seconds, rate, start_at = args
    connect = _rest_client(port, key) if kind == "rest" else _picker_client(port, full)
    time.sleep(max(0.0, start_at - time.time()))
    cpu = time.process_time()
    _, latencies = asyncio.run(_drive(connect, streams, seconds, rate))
    return latencies, time.process_time() - cpu


def _load(
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


# -- servers ---------------------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live descendants (uvicorn's workers, the
    picker's processes), all threads (proc(5), /proc/PID/stat)."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stats[int(entry.name)] = (entry / "stat").read_text().rpartition(")")[2].split()
    tree, total = {pid}, 0.0
    for _ in range(4):  # four generations are plenty
        tree |= {p for p, f in stats.items() if int(f[1]) in tree}
    for p in tree:
        if p in stats:
            total += int(stats[p][11]) + int(stats[p][12])
    return total / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _process(
    cmd: list[str], env: dict[str, str], ready: Callable[[], bool], settle: float = 0.0
) -> Iterator[int]:
    server = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if ready():
                break
            time.sleep(0.2)
        else:
            raise SystemExit(f"{cmd[2:4]} did not get ready")
        time.sleep(settle)  # the other processes of a multi-process server start meanwhile
        yield server.pid
    finally:
        server.terminate()
        server.wait(timeout=15)


def _http_ok(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1)
        return True
    except OSError:
        return False


def _tcp_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _grpc_ready(port: int) -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="readiness"), timeout=1
            )
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)
    except grpc.RpcError:
        return False


def _measure(
    kind: str, port: int, key: str, args: argparse.Namespace, pid: int, full: bool = False
) -> tuple[dict[str, float], dict[str, float]]:
    """(peak, half-peak) figures; the peak also gets the server's own CPU time per request,
    which the clients' share of the cores does not blur."""
    load = {"full": full, "streams": args.streams, "clients": args.clients, "driver": args.driver}
    _load(kind, port, key, seconds=2, **load)  # warm up
    before = _cpu_seconds(pid)
    peak = _load(kind, port, key, seconds=args.seconds, **load)
    peak["server_cpu_us"] = (_cpu_seconds(pid) - before) / (peak["rps"] * args.seconds) * 1e6
    half = _load(kind, port, key, seconds=args.seconds, rate=peak["rps"] / 2, **load)
    return peak, half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10, help="duration of each run")
    parser.add_argument("--streams", type=int, default=16, help="concurrent requests")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--full", action="store_true", help="ext_proc with the response path")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="server processes on each side: uvicorn --workers, run_picker --processes, echoes",
    )
    parser.add_argument(
        "--driver",
        choices=("python", "h2load"),
        default="python",
        help="load generator on both sides: the Python loops, or nghttp2's h2load (compiled, "
        "as Envoy is; apt-get install nghttp2-client)",
    )
    parser.add_argument(
        "--runs", default="rest,picker,echo", help="which servers to measure (comma-separated)"
    )
    args = parser.parse_args()
    if args.driver == "h2load" and args.full:
        parser.error("--full needs the Python driver (h2load cannot wait for the answers)")
    var = Path(tempfile.mkdtemp(prefix="locus-bench-picker-"))
    env = {
        **os.environ,
        "SECRET_KEY": "bench",
        "DEBUG": "false",
        "LOCUS_VAR_DIR": str(var),
        "LOG_LEVEL": "WARNING",
        "DATABASE_CONN_MAX_AGE": "60",
    }
    manage = [sys.executable, str(REPO / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True, cwd=REPO)
    subprocess.run(
        [*manage, "load_topology", str(FLEET)], env=env, check=True, cwd=REPO, capture_output=True
    )
    key = subprocess.run(
        [*manage, "create_api_key", f"bench-{time.time_ns()}", "--role", "service"],
        env=env,
        check=True,
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.strip()

    runs = set(args.runs.split(","))
    n = str(args.processes)
    settle = 3.0 if args.processes > 1 else 0.0
    rest = ext = full = floor = None
    if "rest" in runs:
        web = _free_port()
        uvicorn = [sys.executable, "-m", "uvicorn", "console.asgi:application", "--port", str(web)]
        uvicorn += ["--workers", n, "--log-level", "warning", "--no-access-log"]
        ok = lambda: _http_ok(f"http://127.0.0.1:{web}/healthz")  # noqa: E731
        with _process(uvicorn, env, ok, settle) as pid:
            rest = _measure("rest", web, key, args, pid)
    if "picker" in runs:
        port, health = _free_port(), _free_port()
        picker = [*manage, "run_picker", "--port", str(port), "--health-port", str(health)]
        picker += ["--source", "munich-app", "--processes", n]
        with _process(picker, env, lambda: _grpc_ready(health), settle) as pid:
            ext = _measure("picker", port, key, args, pid)
            full = _measure("picker", port, key, args, pid, full=True) if args.full else None
    if "echo" in runs:
        echo_port = _free_port()
        echo = [sys.executable, str(REPO / "tests" / "bench" / "echo_picker.py"), str(echo_port)]
        with _process([*echo, n], env, lambda: _tcp_open(echo_port), settle) as pid:
            floor = _measure("picker", echo_port, key, args, pid)

    print(
        f"picker benchmark: fleet-demo (26 nodes), SQLite, {args.streams} concurrent requests "
        f"over {args.clients} client processes, {args.seconds:g}s per run, "
        f"{args.processes} server process(es) on each side, {os.cpu_count()} cores shared, "
        f"{args.driver} clients, "
        f"load average before {LOAD_BEFORE}"
    )
    head = f"{'run':<46}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
    print(f"{head}{'server CPU µs/req':>19}{'client CPU µs/req':>19}")
    rows: list[tuple[str, dict[str, float]]] = []
    for name, pair in (
        ("REST POST /placements", rest),
        ("ext_proc request path", ext),
        ("ext_proc floor: grpcio echo, no decision", floor),
        ("ext_proc with response path", full),
    ):
        if pair is not None:
            rows += [
                (f"{name} (max)", pair[0]),
                (f"  at {pair[0]['rps'] / 2:.0f}/s (half max)", pair[1]),
            ]
    for name, r in rows:
        cpu = f"{r['server_cpu_us']:>19.0f}" if "server_cpu_us" in r else f"{'':>19}"
        print(
            f"{name:<46}{r['rps']:>9.0f}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}{cpu}"
            f"{r['client_cpu_us']:>19.0f}"
        )
    if ext is not None and rest is not None:
        print(f"ext_proc decisions/s vs REST: {ext[0]['rps'] / rest[0]['rps']:.0%} (goal >= 80%)")
        ratio = ext[0]["server_cpu_us"] / rest[0]["server_cpu_us"]
        print(f"server CPU per decision, ext_proc vs REST: {ratio:.2f}x")
    if ext is not None and floor is not None:
        share = floor[0]["server_cpu_us"] / ext[0]["server_cpu_us"]
        print(f"grpcio floor's share of the picker's server CPU: {share:.0%}")
    if ext is not None:
        print(f"ext_proc p99 at half max: {ext[1]['p99_ms']:.2f} ms (goal < 5 ms)")
    print(f"load average after: {_loadavg()}")


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


LOAD_BEFORE = _loadavg()


if __name__ == "__main__":
    main()
