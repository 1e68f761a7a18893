"""Instructions per decision, counted by callgrind: a speed figure the machine's other load does
not move, for comparing two versions of the decision path on a shared machine.

    .venv/bin/python tests/bench/bench_decide_instructions.py [--base REV] [--count 2000]
        [--cases least-loaded:64,weighted-score:64,prefix-aware:64,weighted-score:1000]

For each case (policy : fleet size) it runs `bench-decide`'s own decision closure
(`optimizer.bench_decide._kernel` on `_fleet_of(fleet-demo, N)` and `_state`) under
`valgrind --tool=callgrind`, once with COUNT decisions and once with none; instructions per
decision = (Ir(COUNT) - Ir(0)) / COUNT, so imports and setup cancel out. With `--base REV`
the same runs go on a `git archive` of REV beside this checkout, and a change column is
printed: the issue #25 goal "speed unchanged (±5%)" read without timing noise. Valgrind counts
instructions, not cycles (cache misses are not in it); `bench-decide` gives wall and CPU time.
Needs Debian's `valgrind`. Each run takes about a minute. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CASES = "least-loaded:64,prefix-aware:64,weighted-score:64,weighted-score:1000"

# The decisions, run inside valgrind on the tree given by PYTHONPATH. Only names both the
# current `bench_decide` and the pre-`optimizer.decide` one (before issue #25) define.
_KERNEL = """
import sys
import numpy as np
from optimizer import bench_decide as b
from optimizer.topology_files import load_topology
name, n, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
topology, request = b._fleet_of(load_topology(sys.argv[4]), n)
fleet = b.Fleet(topology)
dynamic, prefix = b._state(fleet, fleet.model_index[request.model], np.random.default_rng(0))
decide = b._kernel(fleet, request, dynamic, prefix, b.get_policy(name, topology, 0))
decide()
for _ in range(count):
    decide()
"""


def instructions(tree: Path, policy: str, nodes: int, count: int) -> int:
    """Instructions callgrind counts for the kernel script on `tree` (`count` decisions)."""
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "kernel.py"
        script.write_text(_KERNEL)
        fleet = tree / "optimizer" / "topologies" / "fleet-demo.yaml"
        run = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={scratch}/out",
                sys.executable,
                str(script),
                policy,
                str(nodes),
                str(count),
                str(fleet),
            ],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            capture_output=True,
            text=True,
            check=True,
        )
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no total:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def per_decision(tree: Path, policy: str, nodes: int, count: int) -> float:
    """Instructions per decision: the difference between `count` decisions and none."""
    return (instructions(tree, policy, nodes, count) - instructions(tree, policy, nodes, 0)) / count


def archive(rev: str, into: Path) -> Path:
    """The tracked files of `rev`, extracted into `into` (the working tree is not touched)."""
    tar = subprocess.run(
        ["git", "archive", "--format=tar", rev], cwd=REPO, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as files:
        files.extractall(into, filter="data")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="a git revision to compare with (default: none)")
    parser.add_argument("--count", type=int, default=2000, help="decisions per run")
    parser.add_argument("--cases", default=CASES, help="POLICY:NODES, comma-separated")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian's package valgrind)")
    cases = []
    for case in args.cases.split(","):
        policy, _, nodes = case.partition(":")
        if not nodes.isdigit() or int(nodes) < 1:
            parser.error(f"bad case {case!r}: expected POLICY:NODES")
        cases.append((policy, int(nodes)))
    with tempfile.TemporaryDirectory() as scratch:
        base = archive(args.base, Path(scratch)) if args.base else None
        head = "| policy | nodes | instructions/decision |"
        print(head + (f" at {args.base} | change |" if base else ""))
        print("|---|---|---|" + ("---|---|" if base else ""))
        for policy, nodes in cases:
            now = per_decision(REPO, policy, nodes, args.count)
            row = f"| {policy} | {nodes} | {now:,.0f} |"
            if base is not None:
                then = per_decision(base, policy, nodes, args.count)
                row += f" {then:,.0f} | {100 * (now - then) / then:+.1f}% |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
