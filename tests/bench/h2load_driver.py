"""The compiled load generator for `bench_picker.py --driver h2load`: nghttp2's h2load
(Debian `nghttp2-client`), HTTP/2 for gRPC and HTTP/1.1 (`--h1`) for REST.

Why: the Python grpc.aio client costs several times the CPU per request of the raw-socket
HTTP/1.1 client on the REST side (both measured by the benchmark), and the clients share the
two cores with the server, so with Python clients the comparison is partly one of clients.
Envoy, the real ext_proc client, is compiled; so is h2load, on both sides.

An ext_proc stream is one HTTP/2 request to `/envoy.service.ext_proc.v3.ExternalProcessor/
Process` whose body is the gRPC-framed messages (gRPC over HTTP/2: a 0 byte, a 4-byte
big-endian length, the message; PROTOCOL-HTTP2.md in grpc/grpc): request headers, then the
body with `end_of_stream`. h2load sends them and half-closes at once, then reads the answers
(the headers answer and the echoed body) and the trailers. Envoy keeps its side open for the
response path instead; the picker answers the same two messages either way. h2load does not
read gRPC trailers, so a run also checks the bytes that came back: every answer must carry
the echoed body (an ImmediateResponse error would not).
"""

from __future__ import annotations

import re
import resource
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

PROCESS = "/envoy.service.ext_proc.v3.ExternalProcessor/Process"


def available() -> bool:
    return shutil.which("h2load") is not None


def grpc_frames(messages: list[bytes]) -> bytes:
    return b"".join(b"\0" + struct.pack(">I", len(m)) + m for m in messages)


def load(
    kind: str,
    port: int,
    key: str,
    body: bytes,
    *,
    min_answer_bytes: int,
    streams: int,
    clients: int,
    seconds: float,
    rate: float | None,
) -> dict[str, float]:
    """One h2load run: `streams` connections with one request in flight each, over `clients`
    threads, for `seconds`; open loop at `rate` requests/s in all when given."""
    with tempfile.TemporaryDirectory(prefix="locus-h2load-") as tmp:
        data, log = Path(tmp) / "body", Path(tmp) / "log"
        data.write_bytes(body)
        cmd = ["h2load", "-c", str(streams), "-m", "1", "-t", str(clients), "-D", f"{seconds:g}"]
        cmd += ["--warm-up-time", "1", "-d", str(data), f"--log-file={log}"]
        if rate is not None:
            cmd += [f"--rps={rate / streams:.3f}"]
        if kind == "rest":
            cmd += ["--h1", "-H", f"authorization: Bearer {key}"]
            cmd += ["-H", "content-type: application/json"]
            cmd += [f"http://127.0.0.1:{port}/api/v1/placements"]
        else:
            cmd += ["-H", "content-type: application/grpc", "-H", "te: trailers"]
            cmd += [f"http://127.0.0.1:{port}{PROCESS}"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = [line.split("\t") for line in log.read_text().splitlines() if line]
    # Status 0: a request still in flight when the run ended (at most one per connection).
    unfinished = sum(1 for r in rows if r[1] == "0")
    statuses = {int(r[1]) for r in rows if r[1] != "0"}
    if statuses != {200} or unfinished > streams:
        raise RuntimeError(f"{kind} answered HTTP {sorted(statuses)}, {unfinished} unfinished")
    latencies = sorted(int(r[2]) / 1e6 for r in rows if r[1] == "200")
    n = len(latencies)
    match = re.search(r"requests: \d+ total, \d+ started, (\d+) done", out)
    traffic = re.search(r"\((\d+)\) data", out)
    if match is None or traffic is None or int(traffic[1]) < int(match[1]) * min_answer_bytes:
        raise RuntimeError(f"{kind}: answers shorter than expected:\n{out}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {
        "rps": n / seconds,
        "p50_ms": latencies[n // 2] * 1000,
        "p99_ms": latencies[min(n - 1, int(n * 0.99))] * 1000,
        # h2load's CPU over the whole run, warm-up second included.
        "client_cpu_us": cpu / n * 1e6,
    }
