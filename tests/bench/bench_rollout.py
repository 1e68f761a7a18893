"""What `GET /api/v1/rollout`'s arm figures cost to compute, with and without attributed cost.

    nice .venv/bin/python tests/bench/bench_rollout.py [--minutes 20,80] [--per-minute 240]

Fills a temporary database (a SQLite file, or the PostgreSQL database named by DATABASE_URL)
with the demo inventory (`load_topology fleet-demo.yaml`), a canary's decision records with
outcomes and version-2 receipts (`--per-minute` over both arms, the live demo's rate at a 50%
canary) and each node's `running` readings every 10 s, then times
`console.policies.canary.arm_stats` (what the rollout view calls) over the whole canary, as
the watchdog calls it (`attribute=False`) and as the view does (`attribute=True`); best of
five. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
SCRAPE_S = 10


def _fill(minutes: int, per_minute: int, start: datetime) -> None:
    from console.inventory.selectors import node_prices
    from console.placement.models import DecisionRecord
    from telemetry.storage import resolve_series, write_readings

    nodes = sorted(node_prices())
    n = minutes * per_minute
    records = []
    for i in range(n):
        at = start + timedelta(seconds=60 * i / per_minute)
        node = nodes[i % len(nodes)]
        pick = {"node": node, "cost_usd": 0.002, "prefill_ms": 400.0}
        records.append(
            DecisionRecord(
                id=f"{i:032x}",
                created_at=at,
                source="munich-app",
                source_site="muc-edge",
                model="llama-3.1-8b",
                slo="interactive-eu",
                prompt_tokens=1800,
                max_output_tokens=256,
                node=node,
                node_site="x",
                policy_name="p",
                policy_version="v",
                arm="canary" if i % 2 else "active",
                latency_us=80.0,
                ok=True,
                slo_met=i % 30 != 0,
                ttft_ms=900.0,
                e2e_ms=6000.0,
                outcome_at=at + timedelta(seconds=6),
                receipt={"v": 2, "candidates": [pick], "rejected": {}},
            )
        )
    DecisionRecord.objects.bulk_create(records, batch_size=5000)
    ids = resolve_series([(node, "running", ()) for node in nodes])
    readings = [
        (ids[(node, "running", ())], start + timedelta(seconds=t), float(t % 7))
        for node in nodes
        for t in range(-SCRAPE_S, minutes * 60 + 60, SCRAPE_S)
    ]
    write_readings(readings)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", default="20,80", help="canary lengths, comma-separated")
    ap.add_argument("--per-minute", type=int, default=240)
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-rollout-"))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{workdir / 'bench.sqlite3'}")
    os.environ["DJANGO_SETTINGS_MODULE"] = "console.settings"
    import django

    django.setup()
    from django.core.management import call_command

    from console.placement.models import DecisionRecord
    from console.policies.canary import arm_stats
    from telemetry.models import Reading

    call_command("migrate", verbosity=0)
    call_command("load_topology", str(REPO / "optimizer/topologies/fleet-demo.yaml"), verbosity=0)
    print(f"database: {os.environ['DATABASE_URL'].split('@')[-1]}")
    for minutes in (int(m) for m in args.minutes.split(",")):
        DecisionRecord.objects.all().delete()
        Reading.objects.all().delete()
        start = datetime(2026, 11, 1, tzinfo=UTC)
        _fill(minutes, args.per_minute, start)
        timings = {}
        for attribute in (False, True):
            best = float("inf")
            for _ in range(5):
                began = time.perf_counter()
                stats = arm_stats(start, attribute=attribute)
                best = min(best, time.perf_counter() - began)
            timings[attribute] = best
        records = minutes * args.per_minute
        covered = sum(s.attributed for s in stats.values())
        print(
            f"{minutes} min canary, {records:,} outcomes ({covered:,} attributed): "
            f"{1000 * timings[False]:.0f} ms without attribution, "
            f"{1000 * timings[True]:.0f} ms with ({timings[True] / timings[False]:.2f}x)"
        )


if __name__ == "__main__":
    main()
