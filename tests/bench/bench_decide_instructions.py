"""Instructions per decision, counted by callgrind: a speed figure the machine's other load does
not move, for comparing two versions of the decision path on a shared machine.

    .venv/bin/python tests/bench/bench_decide_instructions.py [--base REV] [--count 20000]
        [--cases least-loaded:64,weighted-score:64,prefix-aware:64,weighted-score:1000]
        [--topology optimizer/topologies/pd-two-regions.yaml --split pd-threshold]

For each case (policy : fleet size) it runs `bench-decide`'s own decision closure
(`optimizer.bench_decide._kernel` on `_fleet_of(fleet-demo, N)` and `_state`) under
`valgrind --tool=callgrind`, once with COUNT decisions and once with none; instructions per
decision = (Ir(COUNT) - Ir(0)) / COUNT, so imports and setup cancel out. They cancel only up
to a few million instructions (address layout, threads), which is why COUNT is large: at 20,000
decisions that noise is a few hundred instructions per decision. With `--base REV`
the same runs go on a `git archive` of REV beside this checkout, and a change column is
printed: the issue #25 goal "speed unchanged (±5%)" read without timing noise. Valgrind counts
instructions, not cycles (cache misses are not in it); `bench-decide` gives wall and CPU time.
With `--split NAME` the decision is `bench-decide`'s split path instead (`_split`: the
pipeline ending with that split stage, on its long prompt; issue #30), on `--topology`
(a fleet with prefill/decode pools, such as pd-two-regions.yaml; revisions before #30 have
no split path). Needs Debian's `valgrind`. Each run takes about a minute. Asserts nothing.
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
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CASES = "least-loaded:64,prefix-aware:64,weighted-score:64,weighted-score:1000"

# The decisions, run inside valgrind on the tree given by PYTHONPATH. Only names both the
# current `bench_decide` and the pre-`optimizer.decide` one (before issue #25) define, but for
# the split path (`_split`, since issue #30).
_KERNEL = """
import dataclasses
import sys
import numpy as np
from optimizer import bench_decide as b
from optimizer.topology_files import load_topology
name, n, count, split = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5]
topology, request = b._fleet_of(load_topology(sys.argv[4]), n)
fleet = b.Fleet(topology)
dynamic, prefix = b._state(fleet, fleet.model_index[request.model], np.random.default_rng(0))
policy = b.get_policy(name, topology, 0)
if split:
    long = dataclasses.replace(request, prompt_tokens=b.SPLIT_PROMPT_TOKENS)
    decide, _ = b._split(fleet, long, dynamic, prefix, policy, split)
else:
    decide = b._kernel(fleet, request, dynamic, prefix, policy)
decide()
for _ in range(count):
    decide()
"""


# The fleet the decisions run on (relative to the tree) and the split stage ("": none).
SETUP = {"topology": "optimizer/topologies/fleet-demo.yaml", "split": ""}


def instructions(tree: Path, policy: str, nodes: int, count: int) -> int:
    """Instructions callgrind counts for the kernel script on `tree` (`count` decisions)."""
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "kernel.py"
        script.write_text(_KERNEL)
        fleet = tree / SETUP["topology"]
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
                SETUP["split"],
            ],
            cwd=tree,
            # A fixed hash seed: string hashing then probes dicts the same way in every run.
            env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)},
            capture_output=True,
            text=True,
            check=True,
        )
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no total:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def per_decision(trees: list[Path], policy: str, nodes: int, count: int, jobs: int) -> list[float]:
    """Instructions per decision on each tree: the difference between `count` decisions and
    none, the valgrind runs `jobs` at a time."""
    runs = [(tree, n) for tree in trees for n in (count, 0)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        totals = list(pool.map(lambda run: instructions(run[0], policy, nodes, run[1]), runs))
    return [(totals[2 * i] - totals[2 * i + 1]) / count for i in range(len(trees))]


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
    parser.add_argument("--count", type=int, default=20000, help="decisions per run")
    parser.add_argument("--cases", default=CASES, help="POLICY:NODES, comma-separated")
    parser.add_argument("--jobs", type=int, default=2, help="valgrind runs at a time")
    parser.add_argument("--topology", default=SETUP["topology"], help="relative to the tree")
    parser.add_argument("--split", default="", help="a split stage: time the split path")
    args = parser.parse_args()
    SETUP.update(topology=args.topology, split=args.split)
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
        trees = [REPO] if base is None else [REPO, base]
        for policy, nodes in cases:
            now, *then = per_decision(trees, policy, nodes, args.count, max(1, args.jobs))
            row = f"| {policy} | {nodes} | {now:,.0f} |"
            if then:
                row += f" {then[0]:,.0f} | {100 * (now - then[0]) / then[0]:+.1f}% |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
