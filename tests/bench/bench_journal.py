"""What the decision recorder's write-ahead journal costs on the request path, in process.

    .venv/bin/python tests/bench/bench_journal.py [--rounds 4] [--decisions 4000]

On a scratch SQLite database with the demo fleet, with the journal in a temporary directory
(the machine's own disk, as LOCUS_RECORD_JOURNAL_DIR's default is):

1. `Journal.append` of a real decision's record row (its receipt included): µs per append,
   wall and CPU;
2. `Recorder.record` without and with the journal: µs per call;
3. decisions end to end (`handlers.decide_one`, the answer serialised, the recorder flushed
   every 400 decisions as its thread would, rotating the journal each time), without and with
   the journal, alternated in the same run (off, on, off, on, ...): µs of wall and CPU time
   per decision and decisions/s on one thread.

Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _timed(call: Callable[[], None], n: int) -> tuple[float, float]:
    """(wall µs, CPU µs) per call of `call`, over `n` calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        call()
    return (time.perf_counter() - wall) / n * 1e6, (time.process_time() - cpu) / n * 1e6


def _median(figures: list[tuple[float, float]]) -> str:
    wall = statistics.median(f[0] for f in figures)
    cpu = statistics.median(f[1] for f in figures)
    spread = f"{min(f[0] for f in figures):.1f}-{max(f[0] for f in figures):.1f}"
    return f"wall {wall:6.2f} µs (rounds {spread}), CPU {cpu:6.2f} µs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--decisions", type=int, default=4000)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    os.environ["LOCUS_ENGINE_BACKGROUND"] = "false"
    from tests.bench.inprocess import scratch_console

    _fleet, body = scratch_console()
    import orjson

    from console.placement.doors import handlers
    from console.placement.doors.bodies import PlacementRequestBody, parse
    from console.placement.engine.journal import Journal
    from console.placement.engine.recorder import Recorder
    from console.placement.engine.records import record_row
    from console.placement.engine.runtime import runtime

    serving = runtime()
    serving.refresh()
    request = parse(PlacementRequestBody, body)
    row = record_row(serving.engine.decide(handlers.decision_input(request, "key:bench")))
    directory = Path(tempfile.mkdtemp(prefix="locus-journal-bench-"))
    print(f"journal in {directory}; one record line is {len(orjson.dumps({'r': row}))} bytes")

    journal = Journal(directory / "append")
    appends = [_timed(lambda: journal.append("r", row), 20_000) for _ in range(args.rounds)]
    journal.close(delete=True)
    print(f"Journal.append             {_median(appends)}")

    for label, with_journal in (("without", False), ("with", True)):
        recorder = Recorder(
            write_batch=lambda records, outcomes: None,
            publish=lambda *_: None,
            journal=Journal(directory / "record") if with_journal else None,
        )
        figures = []
        for _ in range(args.rounds):
            figures.append(_timed(lambda r=recorder: r.record(row, dict), 20_000))  # type: ignore[misc]
            recorder.flush()
        recorder.stop()
        print(f"Recorder.record {label:7s}    {_median(figures)}")

    def decide() -> None:
        orjson.dumps(handlers.decide_one(body, "key:bench")[1])

    results: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    decision_journal = Journal(directory / "decisions")
    for _ in range(3):
        decide()
    for _ in range(args.rounds):
        for with_journal in (False, True):
            serving.recorder.journal = decision_journal if with_journal else None
            serving.recorder.flush()
            serving.refresh()
            wall, cpu = time.perf_counter(), time.process_time()
            for i in range(args.decisions):
                decide()
                if i % 400 == 0:
                    serving.recorder.flush()
            serving.recorder.flush()
            n = args.decisions
            results[with_journal].append(
                ((time.perf_counter() - wall) / n * 1e6, (time.process_time() - cpu) / n * 1e6)
            )
    decision_journal.close(delete=True)
    for with_journal, figures in results.items():
        wall = statistics.median(f[0] for f in figures)
        label = "with" if with_journal else "without"
        print(
            f"decisions {label:7s} journal {_median(figures)}; {1e6 / wall:,.0f} decisions/s "
            "on one thread"
        )


if __name__ == "__main__":
    main()
