"""Benchmark of the Envoy endpoint picker (ext_proc) beside the REST decision fast path.

    .venv/bin/python tests/bench/bench_picker.py [--seconds 10] [--streams 16] [--clients 2]
        [--processes 1] [--full] [--runs rest,picker,echo] [--json PATH]

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
CPU time per request (all processes of each side). `--json PATH` also writes every run's
figures as JSON, the report docs/results/ renders (tools/results/serving.py); it records
whether the servers shared their live view (`LOCUS_SHARED_VIEW_URL`, by default `REDIS_URL`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from picker_load import load  # noqa: E402
from servers import (  # noqa: E402
    free_port,
    grpc_ready,
    http_ok,
    loadavg,
    process,
    scratch_server_env,
    tcp_open,
    tree_cpu_s,
)

FLEET = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"


def _measure(
    kind: str, port: int, key: str, args: argparse.Namespace, pid: int, full: bool = False
) -> tuple[dict[str, float], dict[str, float]]:
    """(peak, half-peak) figures; the peak also gets the server's own CPU time per request,
    which the clients' share of the cores does not blur."""
    shape = {"full": full, "streams": args.streams, "clients": args.clients, "driver": args.driver}
    load(kind, port, key, seconds=2, **shape)  # warm up
    before = tree_cpu_s(pid)
    peak = load(kind, port, key, seconds=args.seconds, **shape)
    peak["server_cpu_us"] = (tree_cpu_s(pid) - before) / (peak["rps"] * args.seconds) * 1e6
    half = load(kind, port, key, seconds=args.seconds, rate=peak["rps"] / 2, **shape)
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
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    if args.driver == "h2load" and args.full:
        parser.error("--full needs the Python driver (h2load cannot wait for the answers)")
    env, key = scratch_server_env(FLEET)
    manage = [sys.executable, str(REPO / "manage.py")]

    runs = set(args.runs.split(","))
    n = str(args.processes)
    settle = 3.0 if args.processes > 1 else 0.0
    rest = ext = full = floor = None
    if "rest" in runs:
        web = free_port()
        uvicorn = [sys.executable, "-m", "uvicorn", "console.asgi:application", "--port", str(web)]
        uvicorn += ["--workers", n, "--log-level", "warning", "--no-access-log"]
        ok = lambda: http_ok(f"http://127.0.0.1:{web}/healthz")  # noqa: E731
        with process(uvicorn, env, ok, settle) as pid:
            rest = _measure("rest", web, key, args, pid)
    if "picker" in runs:
        port, health = free_port(), free_port()
        picker = [*manage, "run_picker", "--port", str(port), "--health-port", str(health)]
        picker += ["--source", "munich-app", "--processes", n]
        with process(picker, env, lambda: grpc_ready(health), settle) as pid:
            ext = _measure("picker", port, key, args, pid)
            full = _measure("picker", port, key, args, pid, full=True) if args.full else None
    if "echo" in runs:
        echo_port = free_port()
        echo = [sys.executable, str(REPO / "tests" / "bench" / "echo_picker.py"), str(echo_port)]
        with process([*echo, n], env, lambda: tcp_open(echo_port), settle) as pid:
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
    print(f"load average after: {loadavg()}")
    if args.json is not None:
        _write_json(args, {"rest": rest, "picker": ext, "echo": floor, "picker_full": full})


def _write_json(args: argparse.Namespace, pairs: dict[str, Any]) -> None:
    # The console reads LOCUS_SHARED_VIEW_URL, falling back to REDIS_URL
    # (console/settings/placement.py).
    shared = os.environ.get("LOCUS_SHARED_VIEW_URL", os.environ.get("REDIS_URL", ""))
    report = {
        "fleet": FLEET.name,
        "processes": args.processes,
        "shared_view": bool(shared),
        "seconds": args.seconds,
        "streams": args.streams,
        "clients": args.clients,
        "driver": args.driver,
        "cores": os.cpu_count(),
        "load_average": {"before": LOAD_BEFORE, "after": loadavg()},
        "runs": {
            name: {"max": pair[0], "half_max": pair[1]}
            for name, pair in pairs.items()
            if pair is not None
        },
    }
    args.json.write_text(json.dumps(report, indent=2) + "\n")


LOAD_BEFORE = loadavg()


if __name__ == "__main__":
    main()
