"""The shared live view's remaining staleness: how long after one decider places a request
another decider's engine sees it (publish-to-visible), through Redis.

    REDIS_URL=redis://127.0.0.1:6379/3 .venv/bin/python tests/bench/bench_sharedview.py \
        [--rate 500] [--seconds 10] [--readers 1] [--batch-ms 5] [--json]

One publisher process places `--rate` sends a second (each stamped with the wall clock as it
is queued, as `Engine._remember` does) through `SharedView.publish`; `--readers` other
processes run their own `SharedView` on the same stream (a scratch stream, deleted after)
and note, for every send they merge, the wall clock minus its stamp. The processes share
this host's clock, so no skew enters. Prints p50/p90/p99/max of that delay, the sends seen
per reader and the publisher's batches. No engine decides: the figure is the transport's
(batching, one XADD, XREAD blocking up to the batch interval, decode), which is what the
engine's view lags behind the others' decisions; merging into a `LiveState` takes its lock
for a few µs per send more.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _setup() -> None:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()


def _reader(url: str, stream: str, batch_ms: float, done: Any, out: Any, ready: Any) -> None:
    _setup()
    import redis

    from console.placement.engine.sharedview import SharedView
    from optimizer.decide.state.shared import Send

    lags: list[float] = []

    def apply(sends: list[Send]) -> int:
        now = time.time()
        lags.extend(now - s.at for s in sends)
        return len(sends)

    view = SharedView(url=url, apply=apply, stream=stream, interval_s=batch_ms / 1000)
    client = redis.Redis.from_url(url)
    view.step(client)  # warm (the stream is new) before the publisher starts
    view.start()  # the background thread a server process runs
    ready.set()
    done.wait()
    view.stop()
    out.put(lags)


def _publisher(
    url: str, stream: str, rate: float, batch_ms: float, seconds: float, out: Any
) -> None:
    _setup()
    until = time.time() + seconds
    from console.placement.engine.sharedview import SharedView
    from optimizer.decide.state.shared import Send

    view = SharedView(url=url, apply=lambda s: 0, stream=stream, interval_s=batch_ms / 1000)
    view.start()
    gap, sent, start = 1.0 / rate, 0, time.time()
    while (now := time.time()) < until:
        due = int((now - start) / gap)
        for _ in range(due - sent):
            view.publish(Send("node-1", "m", (sent, sent + 1, sent + 2), time.time()))
            sent += 1
        time.sleep(min(gap, 0.001))
    time.sleep(0.5)
    view.stop()
    out.put({"sent": sent, "published": view.published})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=500.0, help="sends a second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--readers", type=int, default=1)
    parser.add_argument("--batch-ms", type=float, default=5.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    url = os.environ.get("REDIS_URL") or sys.exit("set REDIS_URL (a Redis database of its own)")
    stream = f"locus:bench:view:{uuid.uuid4().hex}"
    context = multiprocessing.get_context("spawn")
    results: Any = context.Queue()
    done = context.Event()
    readies = [context.Event() for _ in range(args.readers)]
    readers = [
        context.Process(target=_reader, args=(url, stream, args.batch_ms, done, results, r))
        for r in readies
    ]
    for p in readers:
        p.start()
    for r in readies:
        r.wait(60)
    publisher = context.Process(
        target=_publisher,
        args=(url, stream, args.rate, args.batch_ms, args.seconds, results),
    )
    publisher.start()
    pub = results.get(timeout=args.seconds + 120)
    time.sleep(1.0)  # the last batches reach the readers
    done.set()
    got = [results.get(timeout=60) for _ in range(args.readers)]
    for p in (*readers, publisher):
        p.join(10)
    import redis

    redis.Redis.from_url(url).delete(stream)
    lags = [x * 1000 for g in got for x in g]
    seen = [len(g) for g in got]
    lags.sort()

    def q(p: float) -> float:
        return lags[min(len(lags) - 1, int(p * len(lags)))] if lags else float("nan")

    report = {
        "rate_per_s": args.rate,
        "seconds": args.seconds,
        "batch_ms": args.batch_ms,
        "readers": args.readers,
        "sent": pub["sent"],
        "seen_per_reader": seen,
        "lag_ms": {
            "p50": q(0.5),
            "p90": q(0.9),
            "p99": q(0.99),
            "max": lags[-1] if lags else float("nan"),
            "mean": statistics.fmean(lags) if lags else float("nan"),
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    lag = report["lag_ms"]
    print(
        f"{pub['sent']} sends at {args.rate:.0f}/s for {args.seconds:.0f} s, batches of "
        f"<= {args.batch_ms:g} ms, {args.readers} reader(s) saw {seen}"
    )
    print(
        "publish-to-visible ms: "
        + "  ".join(f"{k} {v:.2f}" for k, v in lag.items() if isinstance(v, float))
    )


if __name__ == "__main__":
    main()
