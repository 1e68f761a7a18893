"""`python -m tools.results [--check | --run SLUG ... | --list]`, from the repository root.

Without options, renders every table of tools/results/registry.py from the committed reports
into docs/results/ and the README's results table. `--check` writes nothing and exits 1
naming the files that differ. `--run SLUG ...` first runs those tables' scripts (replacing
their reports; they may take minutes), then renders.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from tools.results.build import stale, write
from tools.results.registry import TABLES

ROOT = Path(__file__).resolve().parents[2]


def run_script(slug: str) -> None:
    table = next((t for t in TABLES if t.slug == slug), None)
    if table is None:
        raise SystemExit(f"error: no table {slug!r}; `--list` names them")
    for old in (ROOT / table.reports_dir).glob("*.json"):
        old.unlink()
    print(f"$ {table.script}", file=sys.stderr, flush=True)
    done = subprocess.run(["bash", "-euc", table.script], cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"error: the script of {slug} failed (exit {done.returncode})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.results", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if a generated file is stale")
    mode.add_argument("--run", nargs="+", metavar="SLUG", help="re-run these tables' scripts")
    mode.add_argument("--list", action="store_true", help="print every table's slug and title")
    args = parser.parse_args(argv)
    if args.list:
        for table in TABLES:
            print(f"{table.slug}\t{table.title}")
        return 0
    try:
        if args.check:
            differing = stale(ROOT)
            for path in differing:
                print(f"stale: {path} (run `make results`)", file=sys.stderr)
            return 1 if differing else 0
        for slug in args.run or ():
            run_script(slug)
        for path in write(ROOT):
            print(f"wrote {path}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
