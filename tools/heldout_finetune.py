"""The held-out suite's fine-tuned row: the generalist fine-tuned on each suite fleet, once per
seed, as a user fine-tunes it on their own fleet (issue #26, docs/heldout-suite.md).

    .venv/bin/python -m tools.heldout_finetune --out var/heldout/tuned [--seeds 0,1,2] \
        [--fleets F,...] [--timesteps 30000] [--validate-every 15000] [--parallel 2]

writes `OUT/<fleet>/seed-<s>/` (a `train` output each), the layout `heldout-suite --fine-tuned
OUT` judges seed by seed. Each is `train --init generalist --heldout-fine-tune` at the budget
docs/learned-policy.md gives for fine-tuning on a fleet, on the Azure conversation trace
*after* the requests the suite replays: the suite replays the first `--suite-limit` (4,000)
requests of each trace, so the fine-tune trains and validates on rows it never judges
(`OUT/azure_llm_2023_conv.tail.csv`), and the Mooncake cells are a trace it never saw at all.
A fine-tune already written (its `scorer.pt` present) is kept, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from optimizer import argtypes
from optimizer.heldout.suite import fleet_names
from optimizer.heldout.tuned import seed_dir
from optimizer.traces import SHIPPED_TRACES

TRACE = SHIPPED_TRACES / "azure_llm_2023_conv.csv"


def tail_trace(source: Path, skip: int, out: Path) -> Path:
    """`source` (an Azure .csv: one header row, one request per row) without its first `skip`
    requests, written to `out`; ValueError when nothing would be left."""
    lines = source.read_text(encoding="utf-8").splitlines()
    header, rows = lines[0], lines[1:]
    if len(rows) <= skip:
        raise ValueError(f"{source} has {len(rows)} requests, none after the first {skip}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join([header, *rows[skip:]]) + "\n", encoding="utf-8")
    return out


def train_argv(
    fleet: str, seed: int, trace: Path, out: Path, args: argparse.Namespace
) -> list[str]:
    topology = Path("optimizer/topologies/heldout") / f"{fleet}.yaml"
    return [
        sys.executable, "-m", "optimizer", "train", "--init", "generalist",
        "--heldout-fine-tune", "--topology", str(topology), "--trace", str(trace),
        "--timesteps", str(args.timesteps), "--validate-every", str(args.validate_every),
        "--seed", str(seed), "--out", str(out),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=lambda t: Path(argtypes.name(t)))
    ap.add_argument("--seeds", type=argtypes.naturals, default=[0, 1, 2])
    ap.add_argument("--fleets", type=argtypes.names, default=None)
    ap.add_argument("--timesteps", type=argtypes.count, default=30_000)
    ap.add_argument("--validate-every", type=argtypes.count, default=15_000)
    ap.add_argument("--suite-limit", type=argtypes.count, default=4000)
    ap.add_argument("--parallel", type=argtypes.count, default=2)
    args = ap.parse_args(argv)
    known = fleet_names()
    fleets = args.fleets or known
    unknown = sorted(set(fleets) - set(known))
    if unknown:
        ap.error(f"--fleets: unknown {', '.join(unknown)}; the suite has {', '.join(known)}")
    if not args.seeds:
        ap.error("--seeds: give at least one seed")
    trace = tail_trace(TRACE, args.suite_limit, args.out / f"{TRACE.stem}.tail.csv")
    todo = [
        (fleet, seed)
        for seed in args.seeds
        for fleet in fleets
        if not (seed_dir(args.out / fleet, seed) / "scorer.pt").is_file()
    ]

    def run(job: tuple[str, int]) -> int:
        fleet, seed = job
        out = seed_dir(args.out / fleet, seed)
        out.mkdir(parents=True, exist_ok=True)
        with (out / "train.log").open("w", encoding="utf-8") as log:
            argv_ = train_argv(fleet, seed, trace, out, args)
            code = subprocess.run(argv_, stdout=log, stderr=subprocess.STDOUT, check=False)
        print(f"{fleet} seed {seed}: exit {code.returncode} ({out / 'train.log'})", flush=True)
        return code.returncode

    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        codes = list(pool.map(run, todo))
    return 1 if any(codes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
