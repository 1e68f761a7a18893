"""Four router processes sharing the live view against one, live on the demo fleet (issue #29).

    .venv/bin/python tests/bench/bench_live_deciders.py [--minutes 10] [--processes 1,4]
        [--utilisation 0.5] [--seed 0] [--port-base 28100] [--database NAME]
        [--redis-url redis://127.0.0.1:6379/14] [--json PATH]

For each process count in turn, on a fresh emulated fleet (`serve-fleet` of
`optimizer/topologies/fleet-demo.yaml`, nodes on --port-base addresses), a fresh PostgreSQL
database (dropped and created again) and an emptied Redis database: `run_router --processes N`
with weighted-score, as the router benchmark starts Locus (`routers/locus.py`: the inventory
loaded from the fleet, a scraper reading every node once a second), and with Redis, so the
processes share their live view (`console/placement/engine/sharedview.py`). The same plan
(`routers/plan.py`: the first --minutes of the Mooncake trace at --utilisation of the fleet's
capacity, sources and models drawn with --seed) is replayed open loop with the OpenAI client
(`routers/loadgen.py`, in the router benchmark's venv: `routers/setup_bench_env.sh`).

Figures, per process count:
- SLO attainment as the canary computes an arm's (`routers/outcomes.py`: the canary's selector
  `arm_stats` over the run's decisions, outcomes as the router recorded them);
- decision time p50/p99 from every decision record's `latency_us` (the engine's wall time,
  its lock included: a merge of the others' sends holds it), all processes together; beside
  it, the router's parse + decide time `locus_router_overhead_seconds` from `/metrics`
  (`PROMETHEUS_MULTIPROC_DIR`: every process's series summed), interpolated within its
  buckets as Prometheus' `histogram_quantile` does;
- of the same decisions, the thread CPU time and the wait for the engine's lock
  (`locus_decision_cpu_seconds`, `locus_decision_lock_wait_seconds`, interpolated): wall time
  minus CPU time is time the deciding thread was ready but not running (another of its
  process's threads held the GIL, or the cores were busy), the lock wait what snapshot
  installs and the view's merges cost it;
- the shared view's staleness: `locus_shared_view_lag_seconds` (p50/p99, interpolated),
  `locus_shared_view_merged_total` and `locus_shared_view_up` at the end of the replay;
- the routers' CPU seconds (their process trees, /proc), the scraper's apart, and the load
  average before each run.
A count written `4own` runs 4 processes with the shared view off (`LOCUS_SHARED_VIEW_URL=`,
each process its own view, Redis still the cache and telemetry store): a control that tells
what the view's merging costs the decision from what 4 processes on the same cores do.
Prints a table and, with --json, writes the report `tools.results` renders (slug
`live-deciders`). Nothing here asserts: the goals (within 1 point, p99 within 10%) are
printed as met or not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
import redis
import requests
from prometheus_client.multiprocess import mark_process_dead

sys.path.insert(0, str(Path(__file__).resolve().parent))

from routers import fleet as fleets  # noqa: E402
from routers.locus import locus  # noqa: E402
from routers.peers import FleetTarget  # noqa: E402
from routers.plan import make_plan, write_plan  # noqa: E402
from routers.promtext import histogram, metric_value  # noqa: E402

from optimizer.topology_files import load_topology  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FLEET = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"
TRACE = REPO / "optimizer" / "data" / "traces" / "mooncake_synthetic.jsonl"
POLICY = "weighted-score"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0, help="trace replayed per run")
    p.add_argument("--processes", default="1,4", help="process counts in run order (4own: off)")
    p.add_argument("--utilisation", type=float, default=0.5, help="the router bench's moderate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--drain-s", type=float, default=60.0, help="wait after the last send")
    p.add_argument("--port-base", type=int, default=28100, help="fleet P.., router P+60")
    p.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="server URL")
    p.add_argument("--database", default="locus_livedeciders_bench", help="dropped and recreated")
    p.add_argument("--redis-url", default="redis://127.0.0.1:6379/14", help="emptied per run")
    p.add_argument("--bench-venv", type=Path, default=REPO / "var" / "bench-venv")
    p.add_argument("--work", type=Path, default=REPO / "var" / "bench" / "live-deciders")
    p.add_argument("--json", type=Path, default=None, help="write the report here")
    return p.parse_args(argv)


def fresh_stores(args: argparse.Namespace) -> str:
    """Drop and create the run's database, empty its Redis database; its DATABASE_URL."""
    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{args.database}" WITH (FORCE)')
        db.execute(f'CREATE DATABASE "{args.database}"')
    redis.Redis.from_url(args.redis_url).flushdb()
    return f"{args.pg}/{args.database}"


def forget_dead(multiproc: Path) -> None:
    """Drop the live-gauge files of processes gone (the setup commands that migrated the
    database and loaded the fleet also wrote `locus_shared_view_up` = 0 there): a `livemin`
    gauge is the minimum over the files present, dead processes' included, until they are
    marked dead (prometheus_client's multiprocess mode)."""
    for path in multiproc.glob("gauge_live*_*.db"):
        pid = int(path.stem.rpartition("_")[2])
        if not Path(f"/proc/{pid}").exists():
            mark_process_dead(pid, str(multiproc))


def one_run(
    processes: int, shared: bool, plan_file: Path, args: argparse.Namespace, work: Path
) -> dict[str, Any]:
    """One process count over a fresh fleet, database and Redis: the report's run entry."""
    topology = load_topology(FLEET)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    multiproc = Path(tempfile.mkdtemp(prefix="prom-", dir=work))
    env = {
        "DATABASE_URL": fresh_stores(args),
        "REDIS_URL": args.redis_url,
        "PROMETHEUS_MULTIPROC_DIR": str(multiproc),
    } | ({} if shared else {"LOCUS_SHARED_VIEW_URL": ""})
    fleet = fleets.start_fleet(
        FLEET, topology, args.port_base, fleets.python_for_fleet(), work / "fleet.log"
    )
    running = None
    try:
        target = FleetTarget(FLEET, fleet.urls, fleet.source)
        start = locus(POLICY, processes=processes, env=env)
        running = start(fleets.workers_by_model(topology, fleet.urls), args.port_base + 60,
                        work, target)  # fmt: skip
        fleets.wait_ready(running.urls, running.api_key, timeout_s=180)
        targets = work / "targets.json"
        targets.write_text(
            json.dumps({"models": running.urls, "nodes": fleet.urls, "api_key": running.api_key})
        )
        load_before = os.getloadavg()
        pids = running.pids  # the router (its spawned processes are its children), the scraper
        cpu0 = [fleets.tree_cpu_s(pids[:1]), fleets.tree_cpu_s(pids[1:])]
        replay = subprocess.run(
            [str(args.bench_venv / "bin" / "python"), str(HERE / "routers" / "loadgen.py"),
             "--targets", str(targets), "--plan", str(plan_file),
             "--out", str(work / "results.jsonl"), "--drain-s", str(args.drain_s)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        cpu1 = [fleets.tree_cpu_s(pids[:1]), fleets.tree_cpu_s(pids[1:])]
        forget_dead(multiproc)
        router_url = next(iter(running.urls.values()))
        metrics = requests.get(f"{router_url}/metrics", timeout=30).text
        (work / "metrics.txt").write_text(metrics)
    finally:
        if running is not None:
            running.stop(timeout_s=30)
        fleet.stop()
    loadgen = json.loads(replay.stdout.strip().splitlines()[-1])
    read = subprocess.run(
        [sys.executable, str(HERE / "routers" / "outcomes.py"), str(loadgen["started_unix"])],
        env={**os.environ, **env, "DJANGO_SETTINGS_MODULE": "console.settings",
             "PYTHONPATH": str(REPO)},
        check=True, capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    db = json.loads(read.stdout)
    results = [json.loads(line) for line in (work / "results.jsonl").read_text().splitlines()]
    active = db["arms"].get("active", {"outcomes": 0, "met": 0, "slo_attainment": 0.0})
    return {
        "processes": processes,
        "shared_view": shared,
        "outcomes": active["outcomes"],
        "met": active["met"],
        "slo_attainment": active["slo_attainment"],
        "decisions": db["decisions"],
        "decision_us": db["latency_us"],
        "nodes": db["nodes"],
        "decision_cpu_us": histogram(metrics, "locus_decision_cpu_seconds", scale=1e6),
        "lock_wait_us": histogram(metrics, "locus_decision_lock_wait_seconds", scale=1e6),
        "router_overhead_ms": histogram(metrics, "locus_router_overhead_seconds", scale=1000),
        "shared_view_lag_ms": histogram(metrics, "locus_shared_view_lag_seconds", scale=1000),
        "shared_view_merged": metric_value(metrics, "locus_shared_view_merged_total"),
        "shared_view_up": metric_value(metrics, "locus_shared_view_up"),
        # Calls the router saw the client leave before the answer ended: it records no outcome
        # for them (doors/router/outcome.py), so they are missing from the attainment.
        "client_disconnects": metric_value(metrics, "locus_router_client_disconnects_total"),
        "router_cpu_s": round(cpu1[0] - cpu0[0], 1),
        "scraper_cpu_s": round(cpu1[1] - cpu0[1], 1),
        "load_average_before": [round(x, 2) for x in load_before],
        "client": {
            "requests": loadgen["requests"],
            "answered_200": sum(r.get("status") == 200 for r in results),
            "served": sum(bool(r.get("ok")) for r in results),
            "unfinished": loadgen["unfinished"],
        },
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each run against the first (one process): attainment points and the p99 ratio."""
    base = runs[0]
    out = []
    for run in runs[1:]:
        points = (run["slo_attainment"] - base["slo_attainment"]) * 100
        ratio = run["decision_us"]["p99"] / base["decision_us"]["p99"]
        out.append(
            {
                "processes": run["processes"],
                "shared_view": run["shared_view"],
                "attainment_points": round(points, 2),
                "decision_p99_ratio": round(ratio, 3),
                "within_1_point": abs(points) <= 1.0,
                "p99_within_10_percent": ratio <= 1.10,
            }
        )
    return {"against_processes": base["processes"], "comparisons": out}


def _label(run: dict[str, Any]) -> str:
    return f"{run['processes']}" + ("" if run["shared_view"] else " (own views)")


def print_table(report: dict[str, Any]) -> None:
    head = ("processes", "outcomes", "SLO att.", "Δ pt", "decision p50/p99 µs", "p99 ratio",
            "CPU p50/p99 µs", "lock wait p99 µs", "router p99 ms", "view lag p50/p99 ms",
            "merged", "router CPU s")  # fmt: skip
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    base = report["runs"][0]
    for run in report["runs"]:
        d, lag = run["decision_us"], run["shared_view_lag_ms"]
        cpu, wait = run["decision_cpu_us"], run["lock_wait_us"]
        cells = (
            _label(run), run["outcomes"], f"{run['slo_attainment']:.2%}",
            f"{(run['slo_attainment'] - base['slo_attainment']) * 100:+.2f}",
            f"{d['p50']:.0f} / {d['p99']:.0f}", f"{d['p99'] / base['decision_us']['p99']:.2f}",
            f"{cpu['p50']:.0f} / {cpu['p99']:.0f}", f"{wait['p99']:.0f}",
            f"{run['router_overhead_ms']['p99']:.2f}",
            f"{lag['p50']:.1f} / {lag['p99']:.1f}" if lag["count"] else "-",
            f"{run['shared_view_merged']:.0f}", run["router_cpu_s"],
        )  # fmt: skip
        print("| " + " | ".join(str(c) for c in cells) + " |")
    for c in report["summary"]["comparisons"]:
        print(f"{_label(c)} processes: {c['attainment_points']:+.2f} pt "
              f"(within 1 pt: {c['within_1_point']}), decision p99 x{c['decision_p99_ratio']} "
              f"(within 10%: {c['p99_within_10_percent']})")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    counts = [
        (int(n.removesuffix("own")), not n.endswith("own")) for n in args.processes.split(",")
    ]
    plan = make_plan(load_topology(FLEET), TRACE, utilisation=args.utilisation,
                     window_s=args.minutes * 60, seed=args.seed)  # fmt: skip
    args.work.mkdir(parents=True, exist_ok=True)
    plan_file = args.work / "plan.jsonl"
    write_plan(plan, TRACE, plan_file)
    rate = f"{plan.requests_per_s:.2f} req/s, utilisation {args.utilisation}"
    print(f"{len(plan.requests)} requests over {args.minutes:g} min ({rate})", flush=True)
    runs = []
    for n, shared in counts:
        began = time.monotonic()
        work = args.work / f"p{n}{'' if shared else 'own'}"
        runs.append(one_run(n, shared, plan_file, args, work))
        last = runs[-1]
        print(f"  {_label(last)} process(es): SLO {last['slo_attainment']:.4f}, decision p99 "
              f"{last['decision_us']['p99']:.0f} µs ({time.monotonic() - began:.0f} s)",
              flush=True)  # fmt: skip
    report = {
        "fleet": FLEET.name,
        "policy": POLICY,
        "minutes": args.minutes,
        "utilisation": args.utilisation,
        "requests_per_s": round(plan.requests_per_s, 2),
        "requests": len(plan.requests),
        "seed": args.seed,
        "cores": os.cpu_count(),
        "runs": runs,
        "summary": summary(runs),
    }
    print_table(report)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
