"""Benchmarks of the twin (docs/twin.md): export of recorded decisions, calibration.

    nice .venv/bin/python tests/bench/bench_twin.py [--rows 1000000] [--observations 100000]

1. Export: fills a temporary database (a SQLite file, or the PostgreSQL database named by
   DATABASE_URL) with `--rows` decision records and outcomes through the recorder's own bulk
   writer (multi-row INSERT on SQLite, COPY on PostgreSQL), then runs
   `manage.py export_observations` over the whole window in a child process, once over the
   first 1% of the rows and once over all of them. Prints rows/s and the child's peak RSS:
   constant memory means the two peaks are about equal.
2. Calibration: simulates `fleet-demo-truth.yaml` on the Azure conversation trace repeated
   to `--observations` requests (least-loaded, load 2), writes the observations, and times
   `python -m optimizer calibrate` against the nominal `fleet-demo.yaml` (goal: under 2
   minutes on 2 cores). Prints the wall time and the fidelity before and after.

Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
# This checkout's packages, in this process and its children, whatever the virtualenv's
# editable install points at.
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
)
BATCH = 20_000
# GET /api/v1/observations served the way the ASGI server serves it (Django's AsyncClient
# runs the ASGI handler in process), read chunk by chunk and counted, in a child process.
ASGI_STREAM = """
import django
django.setup()
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Group, User
from django.test import AsyncClient
user, _ = User.objects.get_or_create(username="bench-viewer")
user.groups.add(Group.objects.get_or_create(name="viewer")[0])
client = AsyncClient()
async def stream():
    await client.aforce_login(user)
    response = await client.get("/api/v1/observations", {{"since": "{since}", "until": "{until}"}})
    assert response.status_code == 200, (response.status_code, response.content[:300])
    lines = 0
    async for chunk in response.streaming_content:
        lines += chunk.count(b"\\n")
    return lines
print(async_to_sync(stream)())
"""


def _child(args: list[str], env: dict[str, str], out: Path | None = None) -> tuple[float, int]:
    """Run a child to completion (its stdout into `out`); its wall seconds and peak RSS in MiB."""
    started = time.perf_counter()
    with open(out or os.devnull, "w") as stdout:
        process = subprocess.Popen(args, cwd=REPO, env=env, stdout=stdout)
        _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise SystemExit(f"{args[:4]} failed with status {status}")
    return time.perf_counter() - started, usage.ru_maxrss // 1024


def _fill(rows: int, start: datetime) -> None:
    """`rows` decision records with outcomes, one every 10 ms from `start`."""
    from console.placement.engine.recorder import write_to_database

    nodes = [("fra-h100-1", "fra-core"), ("muc-l4-1", "muc-edge"), ("ash-a100-1", "ash-core")]
    for first in range(0, rows, BATCH):
        records, outcomes = [], []
        for i in range(first, min(rows, first + BATCH)):
            node, site = nodes[i % len(nodes)]
            decision_id = f"{i:032x}"
            records.append(
                {
                    "id": decision_id,
                    "created_at": start + timedelta(milliseconds=10 * i),
                    "source": "munich-app",
                    "source_site": "muc-edge",
                    "model": "llama-3.1-8b",
                    "slo": "interactive-eu",
                    "prompt_tokens": 1800,
                    "max_output_tokens": 256,
                    "session_id": "",
                    "node": node,
                    "node_site": site,
                    "fallbacks": [],
                    "prefix_hashes": [i, i + 1, i + 2, i + 3],
                    "policy_name": "weighted-score",
                    "policy_version": "builtin",
                    "arm": "active",
                    "degraded": "",
                    "shadow_policy": "",
                    "shadow_node": "",
                    "latency_us": 80.0,
                }
            )
            outcomes.append(
                {
                    "id": decision_id,
                    "ttft_ms": 150.0,
                    "e2e_ms": 3000.0,
                    "ok": True,
                    "slo_met": True,
                    "outcome_at": start + timedelta(milliseconds=10 * i + 3000),
                }
            )
        write_to_database(records, outcomes)
        print(f"\r  filled {min(rows, first + BATCH):,} rows", end="", file=sys.stderr)
    print(file=sys.stderr)


def bench_export(rows: int, workdir: Path) -> None:
    env = dict(os.environ)
    env.setdefault("DATABASE_URL", f"sqlite:///{workdir / 'bench.sqlite3'}")
    env["DJANGO_SETTINGS_MODULE"] = "console.settings"
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from console.placement.models import DecisionRecord

    DecisionRecord.objects.all().delete()
    start = datetime(2026, 11, 1, tzinfo=UTC)
    began = time.perf_counter()
    _fill(rows, start)
    print(f"export: filled {rows:,} records in {time.perf_counter() - began:.0f} s")
    runs: list[tuple[int, float]] = []
    for share in (0.01, 1.0):
        count = int(rows * share)
        until = start + timedelta(milliseconds=10 * count)
        out = workdir / f"export-{count}.jsonl"
        seconds, peak = _child(
            [
                PYTHON,
                "manage.py",
                "export_observations",
                "--since",
                start.isoformat(),
                "--until",
                until.isoformat(),
                "--out",
                str(out),
            ],
            env,
        )
        lines = sum(1 for _ in out.open())
        print(
            f"export: {lines:>9,} observations in {seconds:6.1f} s = {lines / seconds:>9,.0f} "
            f"rows/s, peak RSS {peak} MiB ({out.stat().st_size / 1e6:.0f} MB written)"
        )
        out.unlink()
        runs.append((lines, seconds))
    (small, t_small), (large, t_large) = runs
    # The child's start (Django, imports) costs the same in both runs; the difference is the
    # streaming rate itself.
    print(f"export: marginal rate {(large - small) / (t_large - t_small):,.0f} rows/s")
    until = start + timedelta(milliseconds=10 * rows)
    script = ASGI_STREAM.format(since=start.isoformat(), until=until.isoformat())
    # The test client's host name, allowed for this child only.
    counted = workdir / "asgi-lines.txt"
    seconds, peak = _child(
        [PYTHON, "-c", script], env | {"ALLOWED_HOSTS": "testserver"}, out=counted
    )
    lines = int(counted.read_text())
    print(
        f"api (ASGI): {lines:,} observations streamed by GET /api/v1/observations in "
        f"{seconds:.1f} s = {lines / seconds:,.0f} rows/s, peak RSS {peak} MiB"
    )


def _trace(path: Path, requests: int) -> None:
    """The Azure conversation trace repeated end to end up to `requests` requests (Mooncake
    JSONL; each repetition gets block ids of its own)."""
    from optimizer.traces import load_trace

    base = load_trace(REPO / "optimizer" / "data" / "traces" / "azure_llm_2023_conv.csv")
    span = base[-1].arrival_s + 1.0
    with path.open("w") as out:
        for i in range(requests):
            r = base[i % len(base)]
            rep = i // len(base)
            item = {
                "timestamp": round((r.arrival_s + rep * span) * 1000, 3),
                "input_length": r.prompt_tokens,
                "output_length": r.output_tokens,
                "hash_ids": [h - 10_000_000 * rep for h in r.hash_ids],
            }
            out.write(json.dumps(item) + "\n")


def bench_calibration(observations: int, workdir: Path) -> None:
    trace = workdir / "trace.jsonl"
    _trace(trace, observations)
    obs = workdir / "obs.jsonl"
    topologies = REPO / "optimizer" / "topologies"
    seconds, _ = _child(
        [
            PYTHON,
            "-m",
            "optimizer",
            "simulate",
            "--topology",
            str(topologies / "fleet-demo-truth.yaml"),
            "--trace",
            str(trace),
            "--policy",
            "least-loaded",
            "--load",
            "2",
            "--report",
            str(workdir / "sim.json"),
            "--requests-out",
            str(obs),
        ],
        dict(os.environ),
    )
    print(f"calibration: simulated {observations:,} requests on the truth in {seconds:.0f} s")
    report = workdir / "calibration.json"
    seconds, peak = _child(
        [
            PYTHON,
            "-m",
            "optimizer",
            "calibrate",
            "--topology",
            str(topologies / "fleet-demo.yaml"),
            "--observations",
            str(obs),
            "--out",
            str(workdir / "calibrated.yaml"),
            "--report",
            str(report),
        ],
        dict(os.environ),
    )
    fidelity = json.loads(report.read_text())["fidelity"]
    iterations = json.loads(report.read_text())["iterations"]
    print(
        f"calibration: {observations:,} observations in {seconds:.1f} s "
        f"({iterations} iterations, peak RSS {peak} MiB; goal < 120 s)"
    )
    for when in ("before", "after"):
        f = fidelity[when]
        print(
            f"  {when:<6} TTFT median {f['ttft']['median_abs_rel_error']:.1%} "
            f"p95 {f['ttft']['p95_abs_rel_error']:.1%}, E2E median "
            f"{f['e2e']['median_abs_rel_error']:.1%} p95 {f['e2e']['p95_abs_rel_error']:.1%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--skip-calibration", action="store_true")
    args = parser.parse_args()
    print(f"self RSS at start: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")
    with tempfile.TemporaryDirectory(prefix="bench-twin-") as tmp:
        workdir = Path(tmp)
        if not args.skip_calibration:
            bench_calibration(args.observations, workdir)
        if not args.skip_export:
            bench_export(args.rows, workdir)


if __name__ == "__main__":
    main()
