"""Wall time of one console evaluation with 1 and with 2 Celery worker processes.

    .venv/bin/python tests/bench/bench_fanout.py [--workers 1,2] [--limit 1000] \
        [--seeds 0,1,2] [--loads 1,3.5]

Everything lives in a fresh LOCUS_VAR_DIR under /tmp (SQLite database, broker queue,
artifacts), so it touches nothing of the checkout's own console.

For each worker count N: starts `celery -A console worker -Q jobs -c N` on the embedded filesystem
broker (a queue of its own under a temporary directory), queues one evaluation of
`weighted-score` against the active policy and every heuristic on the demo fleet (as
`POST /api/v1/policies/{id}/evaluate` does), waits until it has finished, prints the wall
time and the ratio to the first run, and stops the worker. The evaluation task fans its
replays out over the workers (console.policies.fanout), so with N = 1 the task runs them all
itself. The reports of all runs are compared: they must be identical (wall-clock figures
aside). Prints figures, asserts nothing else: other programs share the machine's cores.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("wall_seconds", "sim_speedup")}
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--loads", default="1,3.5")
    args = parser.parse_args()
    # A var directory of its own: broker queue, artifacts (claims and results), telemetry.
    os.environ["LOCUS_VAR_DIR"] = tempfile.mkdtemp(prefix="locus-bench-fanout-")
    os.environ["CELERY_BROKER_URL"] = "filesystem://"
    os.environ["LOCUS_EVALUATION_LIMIT"] = str(args.limit)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from console.inventory.models import Node
    from console.inventory.services import topology_import
    from console.policies.jobs import evaluation_request
    from console.policies.models import PolicyEvaluation, PolicyVersion
    from console.policies.services import policy_bootstrap, policy_register
    from optimizer.topology_files import load_topology

    if not Node.objects.exists():
        topology_import(topology=load_topology(REPO / "optimizer/topologies/fleet-demo.yaml"))
    policy_bootstrap(heuristic="least-loaded")
    candidate = PolicyVersion.objects.filter(name="weighted-score", version="bench").first()
    if candidate is None:
        candidate = policy_register(
            name="weighted-score", version="bench", heuristic="weighted-score"
        )
    loads = [float(x) for x in args.loads.split(",")]
    seeds = [int(x) for x in args.seeds.split(",")]
    print(
        f"one evaluation: demo fleet, {Path(settings.LOCUS_EVALUATION_TRACE).name} "
        f"(first {args.limit} requests), loads {loads}, seeds {seeds}, 11 policies + oracle"
    )
    env = dict(os.environ)
    first = None
    reports = []
    for count in [int(x) for x in args.workers.split(",")]:
        worker = subprocess.Popen(
            [str(REPO / ".venv/bin/celery"), "-A", "console", "worker", "-Q", "jobs"]
            + ["-c", str(count)]
            + ["--loglevel", "WARNING", "--without-gossip", "--without-mingle"],
            cwd=REPO,
            env=env,
            start_new_session=True,
        )
        try:
            time.sleep(8)  # the worker imports Django and the optimizer
            started = time.perf_counter()
            evaluation = evaluation_request(
                policy=candidate,
                trace=settings.LOCUS_EVALUATION_TRACE,
                loads=loads,
                seeds=seeds,
                requested_by=None,
            )
            # Outside a transaction, the request's on-commit hook has queued the task already.
            while True:
                evaluation = PolicyEvaluation.objects.get(pk=evaluation.pk)
                if evaluation.status in ("succeeded", "failed"):
                    break
                time.sleep(0.5)
            wall = time.perf_counter() - started
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:  # leftover replay tasks; nothing to keep
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
        first = first or wall
        reports.append(_strip(evaluation.report))
        print(
            f"-c {count}: {evaluation.status} in {wall:.1f} s wall "
            f"({first / wall:.2f}x the first run's speed)"
        )
    same = all(r == reports[0] for r in reports)
    print(f"reports identical across worker counts: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
