"""What the shared live view costs the deciding thread: decisions in one process with its
view merging the others' sends at the live rate, against the same process without the view.

    REDIS_URL=redis://127.0.0.1:6379/3 .venv/bin/python tests/bench/bench_view_decide.py \
        [--rate 20] [--peers 3] [--seconds 60] [--rounds 2] [--json]

Each round runs two fresh processes in turn, the view off then on (alternated, as
tests/bench/README.md asks on a shared machine). Each decides `--rate` requests a second, open
loop, through the engine of a scratch console (`inprocess.scratch_console`: the demo fleet,
weighted-score, its background snapshot refresh and recorder running as a server's do), with
prompt blocks drawn from a small pool so prefixes repeat. Meanwhile a peer process publishes
`--peers` x `--rate` sends a second on a scratch stream, as that many other deciders at the
same rate would (names of the demo fleet's nodes and models, prompt blocks like the decider's);
with the view on, this process's `SharedView` reads and merges them into its engine
(`Engine.merge`, under the engine's lock) and publishes its own sends. With it off, the peer
still publishes (the same load on the host) and nothing reads.

Prints, per run: decisions, the engine's wall time per decision (`latency_us`, what the
records keep) and its thread CPU time (`cpu_us`) at p50/p99/max, the wait for the engine's
lock (`lock_wait_us`), and the sends merged. Wall minus CPU is time the deciding thread was
runnable but not running (another thread held the GIL, or the host's CPUs were busy).
Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "optimizer" / "topologies" / "fleet-demo.yaml"
BLOCKS = 400  # the prompt-block pool both sides draw from (repeated prefixes, as in a trace)


def _blocks(rng: random.Random) -> tuple[int, ...]:
    start = rng.randrange(BLOCKS)
    return tuple(range(start, start + rng.randint(1, 12)))


def _peer(url: str, stream: str, rate: float, names: list[str], models: list[str]) -> None:
    """The other deciders' sends, published at `rate` a second until killed."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()
    from console.placement.engine.sharedview import SharedView
    from optimizer.decide.state.shared import Send

    view = SharedView(url=url, apply=lambda s: 0, stream=stream).start()
    rng, gap, start, sent = random.Random(1), 1.0 / rate, time.time(), 0
    while True:
        due = int((time.time() - start) / gap)
        for _ in range(due - sent):
            view.publish(Send(rng.choice(names), rng.choice(models), _blocks(rng), time.time()))
            sent += 1
        time.sleep(gap / 2)


def _quantiles(values: list[float]) -> dict[str, float]:
    xs = sorted(values)

    def q(p: float) -> float:
        return round(xs[min(len(xs) - 1, int(p * len(xs)))], 1) if xs else float("nan")

    return {"p50": q(0.5), "p99": q(0.99), "max": round(xs[-1], 1) if xs else float("nan")}


def _child(args: argparse.Namespace, view_on: bool) -> dict[str, Any]:
    """One run in this process."""
    from tests.bench.inprocess import scratch_console

    fleet, body = scratch_console(FLEET)
    from console.placement.engine.inputs import DecisionInput
    from console.placement.engine.runtime import runtime
    from console.placement.engine.sharedview import SharedView

    rt = runtime()
    rt.ensure_started()
    engine = rt.engine
    url, stream = os.environ["BENCH_VIEW_URL"], args.stream
    view = None
    if view_on:
        view = SharedView(url=url, apply=engine.merge, stream=stream)
        engine.on_sent = view.publish
        view.start()
    # Past start-up: the view's first read replays the stream's tail in one merge, a cost of
    # a process's start (its warm-up), not of its steady state measured here.
    time.sleep(2.0)
    rng = random.Random(0)
    model, source = body["model"], body["source"]
    wall, cpu, wait, placed = [], [], [], 0
    gap, start, made = 1.0 / args.rate, time.perf_counter(), 0
    end = start + args.seconds
    while (now := time.perf_counter()) < end:
        if int((now - start) / gap) <= made:
            time.sleep(gap / 4)
            continue
        made += 1
        d = rt.decide(
            DecisionInput(model=model, prompt_tokens=1800, max_output_tokens=256,
                          source=source, prefix_hashes=_blocks(rng))
        )  # fmt: skip
        placed += d.node is not None
        wall.append(d.latency_us)
        cpu.append(d.cpu_us)
        wait.append(d.lock_wait_us)
    merged = view.merged if view is not None else 0
    if view is not None:
        view.stop()
    return {
        "view": view_on,
        "decisions": made,
        "placed": placed,
        "wall_us": _quantiles(wall),
        "cpu_us": _quantiles(cpu),
        "lock_wait_us": _quantiles(wait),
        "merged": merged,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=20.0, help="decisions a second")
    parser.add_argument("--peers", type=int, default=3, help="other deciders at the same rate")
    parser.add_argument("--seconds", type=float, default=60.0, help="per run")
    parser.add_argument("--rounds", type=int, default=2, help="off/on pairs")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", choices=("off", "on"), help=argparse.SUPPRESS)
    parser.add_argument("--stream", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args, args.child == "on")))
        return
    url = os.environ.get("REDIS_URL") or sys.exit("set REDIS_URL (a Redis database of its own)")
    sys.path.insert(0, str(REPO))
    import redis

    from optimizer.topology_files import load_topology
    from tests.bench.inprocess import scratch_environ

    topology = load_topology(FLEET)
    names = [n.name for n in topology.nodes]
    models = [m for m, _ in topology.model_shares()]
    stream = f"locus:bench:viewdecide:{uuid.uuid4().hex}"
    peer = multiprocessing.get_context("spawn").Process(
        target=_peer, args=(url, stream, args.rate * args.peers, names, models), daemon=True
    )
    peer.start()
    runs = []
    try:
        for _ in range(args.rounds):
            for mode in ("off", "on"):
                env = {**os.environ, **scratch_environ(BENCH_VIEW_URL=url)}
                out = subprocess.run(
                    [sys.executable, __file__, "--child", mode, "--stream", stream,
                     "--rate", str(args.rate), "--seconds", str(args.seconds)],
                    env=env, cwd=REPO, check=True, capture_output=True, text=True,
                ).stdout  # fmt: skip
                runs.append(json.loads(out.strip().splitlines()[-1]))
                if not args.json:
                    r = runs[-1]
                    w, c, lw = r["wall_us"], r["cpu_us"], r["lock_wait_us"]
                    print(f"view {mode:3s}: {r['decisions']} decisions, wall p50/p99/max "
                          f"{w['p50']:.0f}/{w['p99']:.0f}/{w['max']:.0f} µs, CPU "
                          f"{c['p50']:.0f}/{c['p99']:.0f}/{c['max']:.0f} µs, lock wait p99/max "
                          f"{lw['p99']:.0f}/{lw['max']:.0f} µs, merged {r['merged']}, load "
                          f"{r['load_average']}", flush=True)  # fmt: skip
    finally:
        peer.kill()
        redis.Redis.from_url(url).delete(stream)
    if args.json:
        print(json.dumps({"rate": args.rate, "peers": args.peers, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
