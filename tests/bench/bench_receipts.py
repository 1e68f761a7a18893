"""What a decision's receipt costs the engine: median engine time per decision with the top
RECEIPT_CANDIDATES candidates estimated (what every decision does, for its receipt) against
none, in the same run, on the demo fleet.

    .venv/bin/python tests/bench/bench_receipts.py [--decisions 3000] [--rounds 3] [--json PATH]

Runs in-process on a scratch SQLite database (no server, no load generator): the engine's
`decide` plus `receipt_of`, which is all a receipt adds to the request path (the recorder
thread serialises it with the record). Prints figures, asserts nothing. `--json PATH` also
writes each round's medians as JSON, the report docs/results/ renders (tools/results/serving.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the rounds as JSON here")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    scratch = tempfile.mkdtemp(prefix="locus-bench-receipts-")
    os.environ.update(
        DJANGO_SETTINGS_MODULE="console.settings",
        LOCUS_VAR_DIR=scratch,
        DATABASE_URL=f"sqlite:///{scratch}/bench.sqlite3",
        REDIS_URL="",
        LOCUS_ENGINE_BACKGROUND="false",
    )
    import django

    django.setup()
    from django.core.management import call_command

    from console.inventory.services import topology_import
    from console.placement.engine import core
    from console.placement.engine.inputs import DecisionInput
    from console.placement.engine.receipts import receipt_of
    from console.placement.engine.runtime import runtime
    from optimizer.topology_files import load_topology

    call_command("migrate", interactive=False, verbosity=0)
    topology_import(topology=load_topology(FLEET))
    rt = runtime()
    rt.refresh()
    body = DecisionInput(
        model="llama-3.1-8b", prompt_tokens=1800, max_output_tokens=256, source="munich-app"
    )
    decision = rt.engine.decide(body)
    print(f"fleet-demo: {len(decision.rejected)} nodes rejected, pick {decision.node}")

    def median_us(top: int) -> float:
        core.RECEIPT_CANDIDATES = top
        for _ in range(200):  # warm-up
            receipt_of(rt.engine.decide(body))
        times = []
        for _ in range(args.decisions):
            start = time.perf_counter()
            receipt_of(rt.engine.decide(body))
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e6

    shipped = core.RECEIPT_CANDIDATES
    rounds = []
    for round_ in range(args.rounds):
        none, top = median_us(0), median_us(shipped)
        print(
            f"round {round_ + 1}: engine + receipt, median per decision: "
            f"0 candidates {none:.1f} µs, top {shipped} {top:.1f} µs "
            f"(+{top - none:.1f} µs, {top / none:.2f}x)"
        )
        rounds.append({"none_us": none, "top_us": top})
    if args.json is not None:
        report = {"fleet": FLEET.name, "decisions": args.decisions, "candidates": shipped}
        args.json.write_text(json.dumps({**report, "rounds": rounds}, indent=2) + "\n")


if __name__ == "__main__":
    main()
