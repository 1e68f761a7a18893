"""Benchmark of the decision API against a bare Django JSON endpoint, served the same way.

    .venv/bin/python tests/bench/bench_decisions.py [--seconds 10] [--workers 1] [--floor]
        [--topology T.yaml] [--json PATH]

Starts uvicorn (production settings, the demo fleet, PostgreSQL and Redis when DATABASE_URL
and REDIS_URL are set, else the embedded defaults), then drives it with `hey` (Debian's
package `hey`, a real HTTP load generator):

1. maximum throughput of GET /healthz (a plain Django view returning JSON: the baseline);
2. maximum throughput of POST /api/v1/placements (service key, a realistic request);
3. latency of the decision endpoint at half its measured maximum rate (open loop, `-q`),
   and of the bare endpoint under the same open-loop load (at most half its own maximum) as
   the reference for what the setup itself adds;
4. POST /api/v1/placements:batch with 100 requests a call, in decisions per second;
5. with `--floor`, the same single and batch loads on a second server whose engine costs
   nothing (`free_engine.py`): the most any faster engine could give either endpoint;
6. the physical limit: a raw ASGI app answering a constant JSON body (`raw_asgi.py`) under
   the same uvicorn and the same single-decision load.

The fleet is the demo fleet, or `--topology` (for example 1,000 nodes from
`python -m optimizer gen-fleet --nodes 1000 --sites 60 --seed 1`); the request comes from
the fleet's first source and workload model.

Every run also reports the server's CPU time per request: its process tree's user + system
time from /proc over the run, over the requests answered. On a shared machine requests/s swing
with whatever else runs, CPU per request much less, so each goal is printed both ways.

Goals (issues #6 and #14, 2 cores): decisions ≥ 30% of the raw ASGI endpoint's requests/s;
p99 < 10 ms at half the maximum; batch ≥ 10× the single endpoint's decisions/s. Prints
figures, asserts nothing: the load generator shares the machine's two cores with the server.
`--json PATH` also writes every run's figures (req/s, p50/p99 ms, server CPU µs per request)
as JSON, the report docs/results/ renders (tools/results/serving.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from servers import free_port, scratch_server_env, tree_cpu_s

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"
CONCURRENCY = 16


def _request(topology: Path) -> tuple[dict[str, object], int]:
    """A realistic request from the fleet's first source for its first workload model, and
    the fleet's number of nodes."""
    from optimizer.topology_files import load_topology

    fleet = load_topology(topology)
    return {
        "model": fleet.model_shares()[0][0],
        "source": fleet.sources[0].name,
        "prompt_tokens": 1800,
        "max_output_tokens": 256,
        "prefix_hashes": [11, 12, 13],
    }, len(fleet.nodes)


# The server process of each base URL, so a load run can count the CPU time it cost: on a
# shared 2-core machine requests/s swing with whatever else runs, CPU per request much less.
_SERVERS: dict[str, int] = {}


def _hey(
    url: str,
    seconds: int,
    *,
    concurrency: int = CONCURRENCY,
    body: Path | None = None,
    key: str = "",
    qps_per_worker: float | None = None,
) -> dict[str, float]:
    cmd = ["hey", "-z", f"{seconds}s", "-c", str(concurrency)]
    if qps_per_worker is not None:
        cmd += ["-q", f"{qps_per_worker:.2f}"]
    if body is not None:
        cmd += [
            "-m",
            "POST",
            "-T",
            "application/json",
            "-D",
            str(body),
            "-H",
            f"Authorization: Bearer {key}",
        ]
    server = next((pid for base, pid in _SERVERS.items() if url.startswith(base)), None)
    cpu_before = tree_cpu_s(server) if server else 0.0
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    cpu = tree_cpu_s(server) - cpu_before if server else float("nan")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    pct = {int(p): float(s) * 1000 for p, s in re.findall(r"(\d+)%+ in ([\d.]+) secs", out)}
    codes = dict(re.findall(r"\[(\d+)\]\s+(\d+) responses", out))
    bad = {c: n for c, n in codes.items() if c != "200"}
    if bad:
        raise SystemExit(f"non-200 answers from {url}: {bad}\n{out}")
    answered = sum(int(n) for n in codes.values())
    return {
        "rps": rps,
        "p50_ms": pct.get(50, float("nan")),
        "p99_ms": pct.get(99, float("nan")),
        "cpu_us": cpu / answered * 1e6 if answered else float("nan"),
    }


def _batch_load(base: str, seconds: int, batch: Path, key: str) -> dict[str, float]:
    return _hey(f"{base}/api/v1/placements:batch", seconds, body=batch, key=key, concurrency=4)


@contextlib.contextmanager
def _server(env: dict[str, str], app: str, workers: int) -> Iterator[str]:
    """uvicorn serving `app` on a free port until the block ends; yields its base URL."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            app,
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        env=env,
        cwd=REPO,
    )
    base = f"http://127.0.0.1:{port}"
    _SERVERS[base] = server.pid
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10, help="duration of each run")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument("--topology", type=Path, default=FLEET, help="fleet to load")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also load the batch endpoint of a server whose engine costs nothing",
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    if shutil.which("hey") is None:
        raise SystemExit("needs `hey` (apt-get install hey)")
    env, key = scratch_server_env(args.topology)
    var = Path(env["LOCUS_VAR_DIR"])
    request, nodes = _request(args.topology)
    single = var / "single.json"
    single.write_text(json.dumps(request))
    batch = var / "batch.json"
    batch.write_text(
        json.dumps(
            {
                "requests": [
                    {**request, "prompt_tokens": 500 + 10 * i, "session_id": f"s{i}"}
                    for i in range(100)
                ]
            }
        )
    )
    with _server(env, "console.asgi:application", args.workers) as base:
        _hey(f"{base}/api/v1/placements", 2, body=single, key=key)  # warm up every worker
        bare = _hey(f"{base}/healthz", args.seconds)
        decide = _hey(f"{base}/api/v1/placements", args.seconds, body=single, key=key)
        half_rate = decide["rps"] / 2
        half = _hey(
            f"{base}/api/v1/placements",
            args.seconds,
            body=single,
            key=key,
            qps_per_worker=half_rate / CONCURRENCY,
        )
        # The same open-loop load on the bare endpoint: how much of the p99 is the setup's
        # own (hey's synchronised per-connection tickers, the shared cores).
        bare_half = _hey(
            f"{base}/healthz",
            args.seconds,
            qps_per_worker=min(half_rate, bare["rps"] / 2) / CONCURRENCY,
        )
        batched = _batch_load(base, args.seconds, batch, key)
    with _server(env, "tests.bench.raw_asgi:application", args.workers) as base:
        _hey(f"{base}/api/v1/placements", 2, body=single, key=key)  # warm up
        raw = _hey(f"{base}/api/v1/placements", args.seconds, body=single, key=key)
    floor = floor_single = None
    if args.floor:
        with _server(env, "tests.bench.free_engine:application", args.workers) as base:
            _batch_load(base, 2, batch, key)  # warm up
            floor = _batch_load(base, args.seconds, batch, key)
            floor_single = _hey(f"{base}/api/v1/placements", args.seconds, body=single, key=key)
    db = "PostgreSQL" if os.environ.get("DATABASE_URL") else "SQLite"
    print(
        f"decision API benchmark: {args.topology.name} ({nodes} nodes), "
        f"{args.workers} uvicorn worker(s), {db}, hey -c {CONCURRENCY}, {args.seconds}s per run"
    )
    rows = [
        ("raw ASGI constant JSON (the limit)", raw),
        ("GET /healthz (bare Django JSON)", bare),
        ("POST /placements (max)", decide),
        (f"POST /placements at {half_rate:.0f}/s (half max)", half),
        (f"GET /healthz at {bare_half['rps']:.0f}/s (reference)", bare_half),
        ("POST /placements:batch x100 (calls)", batched),
    ]
    if floor is not None and floor_single is not None:
        rows.append(("  same, engine costing nothing", floor))
        rows.append(("POST /placements, engine free", floor_single))
    _report(rows, raw=raw, bare=bare, decide=decide, half=half, batched=batched)
    if args.json is not None:
        runs = {"raw": raw, "bare": bare, "decide": decide, "half": half}
        runs |= {"bare_half": bare_half, "batch": batched}
        if floor is not None and floor_single is not None:
            runs |= {"free_batch": floor, "free_single": floor_single}
        report = {"fleet": args.topology.name, "nodes": nodes, "workers": args.workers}
        report |= {"database": db, "seconds": args.seconds, "batch_size": 100, "runs": runs}
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if floor is not None and floor_single is not None:
        print(
            "ceilings with an engine costing nothing: single "
            f"{floor_single['rps'] / raw['rps']:.0%} of raw ASGI "
            f"({raw['cpu_us'] / floor_single['cpu_us']:.0%} by CPU); batch "
            f"{floor['rps'] * 100 / decide['rps']:.1f}x the real single endpoint "
            f"({decide['cpu_us'] / (floor['cpu_us'] / 100):.1f}x by CPU)"
        )


def _report(rows: list[tuple[str, dict[str, float]]], **runs: dict[str, float]) -> None:
    """The table, then each goal both ways: by requests/s (what a client sees, moved by
    whatever else shares the cores) and by the server's CPU time per request (what the
    server's own work costs, which that sharing hardly moves)."""
    raw, bare, decide, half, batched = (
        runs["raw"],
        runs["bare"],
        runs["decide"],
        runs["half"],
        runs["batched"],
    )
    print(f"{'run':<38}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'CPU µs/req':>12}")
    for name, r in rows:
        print(
            f"{name:<38}{r['rps']:>10.0f}{r['p50_ms']:>10.2f}{r['p99_ms']:>10.2f}"
            f"{r['cpu_us']:>12.0f}"
        )
    print(
        f"decisions/s vs raw ASGI: {decide['rps'] / raw['rps']:.0%} "
        f"({raw['cpu_us'] / decide['cpu_us']:.0%} by CPU; goal >= 30%)"
    )
    print(f"decisions/s vs bare Django endpoint: {decide['rps'] / bare['rps']:.0%}")
    print(f"p99 at half max: {half['p99_ms']:.2f} ms (goal < 10 ms)")
    batch_decisions = batched["rps"] * 100
    print(
        f"batch decisions/s: {batch_decisions:.0f} = {batch_decisions / decide['rps']:.1f}x "
        f"single ({decide['cpu_us'] / (batched['cpu_us'] / 100):.1f}x by CPU; goal >= 10x)"
    )


if __name__ == "__main__":
    main()
