"""CPU time per decision on the decision path, in process: a figure the machine's other load
hardly moves (unlike requests/s, which needs idle cores).

    .venv/bin/python tests/bench/bench_decision_cpu.py [--rounds 5] [--topology T.yaml]

On a scratch SQLite database with the demo fleet (or `--topology`): the fast path's work for
`POST /api/v1/placements` (`handlers.decide_one`, then the answer serialised as
`fastpath._reply` does) and for `POST /api/v1/placements:batch` with 100 requests, the decision
recorder's database writes included (flushed every 400 decisions, as its thread would). Prints
µs of process CPU time per decision for each round, best first; HTTP parsing and the socket are
not in it (tests/bench/bench_decisions.py measures those). Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--topology", type=Path, default=FLEET)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    os.environ["LOCUS_ENGINE_BACKGROUND"] = "false"
    from tests.bench.inprocess import scratch_console

    _fleet, body = scratch_console(args.topology)
    import orjson

    from console.placement.doors import handlers
    from console.placement.engine.runtime import runtime

    serving = runtime()
    serving.refresh()
    batch = {
        "requests": [
            {**body, "prompt_tokens": 500 + 10 * i, "session_id": f"s{i}"} for i in range(100)
        ]
    }

    def single() -> None:
        orjson.dumps(handlers.decide_one(body, "key:bench")[1])

    def batched() -> None:
        orjson.dumps(handlers.decide_batch(batch, "key:bench")[1])

    runs: list[tuple[str, Callable[[], None], int, int]] = [
        ("single", single, 2000, 1),
        ("batch x100", batched, 20, 100),
    ]
    print(f"{args.topology.name}: µs of CPU per decision, {args.rounds} rounds, best first")
    for name, call, calls, per_call in runs:
        for _ in range(3):  # warm-up
            call()
        figures = []
        for _ in range(args.rounds):
            serving.recorder.flush()
            serving.refresh()  # telemetry as a refresh leaves it, not the last round's sends
            start = time.process_time()
            for i in range(calls):
                call()
                if (i * per_call) % 400 == 0:
                    serving.recorder.flush()
            serving.recorder.flush()
            figures.append((time.process_time() - start) / (calls * per_call) * 1e6)
        print(f"{name:12s} " + " ".join(f"{f:7.1f}" for f in sorted(figures)))


if __name__ == "__main__":
    main()
