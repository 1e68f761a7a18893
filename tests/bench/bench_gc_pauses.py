"""Full garbage-collection pauses on the decision path, with and without the heap frozen.

    .venv/bin/python tests/bench/bench_gc_pauses.py [--seconds 40]

Runs, in a fresh process each, the same loop of back-to-back decisions (`handlers.decide_one`,
the demo fleet, weighted-score, the recorder writing to a scratch SQLite database) once with
`LOCUS_GC_FREEZE=false` and once with it on (console/placement/engine/runtime.py
`_freeze_heap`), timing every generation-2 collection with `gc.callbacks`. Prints decisions
made, full collections and their pauses. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"


def _loop(seconds: float) -> dict[str, object]:
    """One run in this process (the child side)."""
    import gc

    from tests.bench.inprocess import scratch_console

    _fleet, body = scratch_console(FLEET)
    import console.asgi  # noqa: F401  (what a serving process has loaded)
    from console.placement.doors import handlers
    from console.placement.engine.runtime import runtime

    runtime().ensure_started()
    started: list[float] = []
    pauses: list[float] = []

    def timed(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started.append(time.perf_counter())
            else:
                pauses.append((time.perf_counter() - started.pop()) * 1000)

    gc.callbacks.append(timed)
    decisions, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        handlers.decide_one(body, "key:bench")
        decisions += 1
    gc.callbacks.remove(timed)
    return {"decisions": decisions, "pauses_ms": [round(p, 1) for p in pauses]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_loop(args.seconds)))
        return
    from tests.bench.inprocess import scratch_environ

    for freeze in ("false", "true"):
        env = {**os.environ, **scratch_environ(LOCUS_GC_FREEZE=freeze)}
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--seconds", str(args.seconds)],
            env=env,
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = json.loads(out.strip().splitlines()[-1])
        pauses = result["pauses_ms"]
        print(
            f"LOCUS_GC_FREEZE={freeze}: {result['decisions']} decisions in {args.seconds:g} s, "
            f"{len(pauses)} full collections, pauses ms: {pauses} "
            f"(max {max(pauses, default=0):.0f})"
        )


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
