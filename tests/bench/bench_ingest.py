"""Ingest benchmark: JSON batches through HTTP into PostgreSQL, next to a raw COPY.

Not collected by pytest (the name does not start with test_). Run it as a script with
PostgreSQL and Redis configured; it creates (and drops) its own database `locus_bench`:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \
        .venv/bin/python tests/bench/bench_ingest.py [--batches 40] [--samples 1000]

It starts the web server (uvicorn, console.asgi) and a Celery worker, pushes realistic batches
(vLLM, DCGM and canonical metric names over many nodes) from several client threads, waits
until the inbox is drained, and prints accepted metric values per second end to end. Then it
COPYs the very rows that were stored into an identical partitioned table, in the same run, and
prints that rate and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
METRICS = (
    [
        "queue_depth",
        "running",
        "kv_usage",
        "prefix_hit_rate",
        "gpu_util",
        "power_w",
        "gpu_mem_used_bytes",
        "gpu_mem_total_bytes",
        "ttft_p50_s",
        "ttft_p95_s",
    ]
    + [
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:generation_tokens_total",
        "vllm:prompt_tokens_total",
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_queries_total",
    ]
    + [
        f"DCGM_FI_DEV_{n}"
        for n in (
            "SM_CLOCK",
            "MEM_CLOCK",
            "GPU_TEMP",
            "MEMORY_TEMP",
            "MEM_COPY_UTIL",
            "ENC_UTIL",
            "DEC_UTIL",
            "PCIE_REPLAY_COUNTER",
        )
    ]
    + [f"app_custom_{i}" for i in range(15)]
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _setup_database(base_url: str) -> str:
    import psycopg

    parsed = urlparse(base_url)
    user, port = parsed.username or "postgres", parsed.port or 5432
    admin = f"postgresql://{user}@{parsed.hostname}:{port}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS locus_bench WITH (FORCE)")
        conn.execute("CREATE DATABASE locus_bench")
    return admin.rsplit("/", 1)[0] + "/locus_bench"


def _django(env: dict[str, str]) -> None:
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def _make_batch(nodes: list[str], start: datetime, batch: int, samples: int) -> bytes:
    rng = random.Random(batch)
    out = []
    for i in range(samples):
        node = nodes[i % len(nodes)]
        ts = start + timedelta(seconds=batch * samples + i, microseconds=batch)
        out.append(
            {
                "node": node,
                "ts": ts.isoformat(),
                "metrics": {m: round(rng.random() * 100, 3) for m in METRICS},
            }
        )
    return json.dumps({"samples": out}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--samples", type=int, default=1000, help="samples per batch")
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    args = parser.parse_args()
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        sys.exit("Set DATABASE_URL (PostgreSQL) and REDIS_URL: the benchmark measures those.")
    db_url = _setup_database(os.environ["DATABASE_URL"])
    # A Redis database of its own, so no other worker on this Redis takes the bench's tasks.
    redis_url = os.environ["REDIS_URL"].rsplit("/", 1)[0] + "/15"
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "REDIS_URL": redis_url,
        "LOCUS_ENGINE_BACKGROUND": "false",
        "LOCUS_TELEMETRY_STATE_PREFIX": "locus-bench",
        "LOG_LEVEL": "WARNING",
    }
    subprocess.run(
        [str(BIN / "python"), "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True
    )
    subprocess.run(
        [
            str(BIN / "python"),
            "manage.py",
            "load_topology",
            "optimizer/topologies/contract-example.yaml",
        ],
        cwd=REPO,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    _django(env)
    from django.db import connection

    from console.access.services import api_key_create
    from console.inventory.models import Accelerator, Node, Site
    from telemetry.models import Reading, TelemetryBatch

    site, acc = Site.objects.first(), Accelerator.objects.first()
    names = [f"bench-{i:03d}" for i in range(args.nodes)]
    Node.objects.bulk_create(
        [Node(name=n, site=site, accelerator=acc, usd_per_hour=1.0) for n in names]
    )
    key = api_key_create(name="bench", role="service").secret
    connection.close()

    port = _free_port()
    procs = [
        subprocess.Popen(
            [
                str(BIN / "uvicorn"),
                "console.asgi:application",
                "--port",
                str(port),
                "--workers",
                str(args.web_workers),
                "--log-level",
                "warning",
            ],
            cwd=REPO,
            env=env,
        ),
        subprocess.Popen(
            [
                str(BIN / "celery"),
                "-A",
                "console",
                "worker",
                "--loglevel=WARNING",
                "-c",
                str(args.worker_concurrency),
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=REPO,
            env=env,
        ),
    ]
    import requests

    try:
        url = f"http://127.0.0.1:{port}/api/v1/telemetry/samples"
        session = requests.Session()
        session.headers.update(
            {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                session.get(f"http://127.0.0.1:{port}/api/v1/me", timeout=5)
                break
            except requests.RequestException:
                if time.monotonic() > deadline:
                    sys.exit("the web server did not start")
                time.sleep(0.2)
        time.sleep(3)  # let the worker finish booting
        start = datetime.now(UTC) - timedelta(hours=12)
        bodies = [_make_batch(names, start, b, args.samples) for b in range(args.batches)]
        values = args.batches * args.samples * len(METRICS)

        def post(body: bytes) -> None:
            response = session.post(url, data=body, timeout=120)
            if response.status_code != 202:
                raise RuntimeError(f"{response.status_code}: {response.text[:300]}")

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(post, bodies))
        t_accepted = time.perf_counter() - t0
        while TelemetryBatch.objects.exists():
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
        stored = Reading.objects.count()
        print(
            f"pushed {args.batches} batches x {args.samples} samples x {len(METRICS)} metrics "
            f"= {values:,} values over {args.nodes} nodes ({args.clients} clients)"
        )
        print(f"  accepted (202) in {t_accepted:.2f} s: {values / t_accepted:,.0f} values/s")
        print(
            f"  end to end (stored in PostgreSQL) in {elapsed:.2f} s: "
            f"{values / elapsed:,.0f} values/s ({stored:,} rows incl. derived fields)"
        )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)

    with connection.cursor() as cursor:
        cursor.execute("SELECT series_id, ts, value FROM telemetry_reading")
        rows = cursor.fetchall()
        cursor.execute(
            "CREATE TABLE bench_copy (LIKE telemetry_reading INCLUDING ALL) PARTITION BY RANGE (ts)"
        )
        first = min(r[1] for r in rows).date()
        last = max(r[1] for r in rows).date()
        day = first
        while day <= last:
            cursor.execute(
                f"CREATE TABLE bench_copy_{day:%Y%m%d} PARTITION OF bench_copy FOR "
                f"VALUES FROM ('{day}T00:00:00+00:00') TO "
                f"('{day + timedelta(days=1)}T00:00:00+00:00')"
            )
            day += timedelta(days=1)
    from django.db import transaction

    from telemetry.storage import copy_rows

    t0 = time.perf_counter()
    with transaction.atomic():
        copy_rows(rows, table="bench_copy")
    raw = time.perf_counter() - t0
    raw_rate = len(rows) / raw
    print(
        f"  raw binary COPY of the same {len(rows):,} rows in {raw:.2f} s: {raw_rate:,.0f} values/s"
    )
    print(
        f"  end to end = {100 * (values / elapsed) / raw_rate:.0f}% of raw COPY "
        f"(counting accepted values; {100 * (stored / elapsed) / raw_rate:.0f}% counting "
        f"stored rows)"
    )
    connection.close()


if __name__ == "__main__":
    main()
