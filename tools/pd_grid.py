"""Prefill/decode split against one-node placement on a P/D fleet (issue #30): a grid of replays.

    nice .venv/bin/python -m tools.pd_grid \
        [--fleet optimizer/topologies/pd-two-regions.yaml] \
        [--trace optimizer/data/traces/mooncake_synthetic.jsonl] [--limit 2000] \
        [--utilisations 0.7,1.2] [--telemetry-interval 10] [--seeds 0,1,2] \
        [--mixed-policies weighted-score,prefix-aware,kv-aware,least-loaded,latency-first] \
        [--chunked-prefill vllm|TOKENS|off] [--out var/pd/grid.json]

For every utilisation and seed it replays the trace as `python -m optimizer simulate` does (the
same `Workload`, `--telemetry-interval`), arm by arm:
- `split`: the fleet's roles honoured, weighted-score for one-node answers, `--split
  pd-threshold`;
- `split-blind`: the same with `--split pd-threshold-blind` (link bandwidth ignored);
- `one-node`: the roles honoured, no split stage (one-phase nodes idle);
- `mixed:<policy>`: `--all-mixed` (the same hardware, every node running both phases) under
  each of `--mixed-policies`; the table's "mixed-only best" is the one with the highest mean
  attainment over the seeds at that load.
Every arm runs with `--chunked-prefill` as given (default `vllm`: nodes that run both phases
pay the prefill-decode interference of vLLM's chunked-prefill scheduler at its default token
budgets, `optimizer.sim.interference`; `off`: a prefill runs alone and stalls decode, the
simulator's default). Each finished replay is saved to `--out` at once; a rerun with the same
`--out` skips those already there, and refuses a file of replays run with another
`--chunked-prefill`. Prints a Markdown table (`tools.results.pd.pd_table`); asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from optimizer.commands.replay import Workload
from optimizer.sim.interference import parse_chunked_prefill
from tools.results.pd import pd_table

PD_FLEET = "optimizer/topologies/pd-two-regions.yaml"
MIXED = "weighted-score,prefix-aware,kv-aware,least-loaded,latency-first"


def _arms(mixed_policies: list[str]) -> list[tuple[str, str, str | None, bool]]:
    """(arm, policy, split stage, all mixed) for every replay of one cell."""
    arms: list[tuple[str, str, str | None, bool]] = [
        ("split", "weighted-score", "pd-threshold", False),
        ("split-blind", "weighted-score", "pd-threshold-blind", False),
        ("one-node", "weighted-score", None, False),
    ]
    return arms + [(f"mixed:{p}", p, None, True) for p in mixed_policies]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fleet", default=PD_FLEET)
    ap.add_argument("--trace", default="optimizer/data/traces/mooncake_synthetic.jsonl")
    ap.add_argument("--limit", type=int, default=2000)
    ap.add_argument("--utilisations", default="0.7,1.2")
    ap.add_argument("--telemetry-interval", type=float, default=10.0)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--mixed-policies", default=MIXED)
    ap.add_argument("--chunked-prefill", default="vllm")
    ap.add_argument("--out", default="var/pd/grid.json")
    args = ap.parse_args()
    chunked = None if args.chunked_prefill == "off" else parse_chunked_prefill(args.chunked_prefill)
    out = Path(args.out)
    rows: dict[str, dict[str, Any]] = json.loads(out.read_text()) if out.exists() else {}
    setting = "off" if chunked is None else chunked.describe()
    other = {r.get("chunked_prefill", "off") for r in rows.values()} - {setting}
    if other:
        sys.exit(f"{out} holds replays run with --chunked-prefill {other.pop()}, not {setting}")
    arms = _arms([p for p in args.mixed_policies.split(",") if p])
    for seed in (int(s) for s in args.seeds.split(",")):
        for util in (float(u) for u in args.utilisations.split(",")):
            for arm, policy, split, all_mixed in arms:
                key = f"{util:g}|{seed}|{arm}"
                if key in rows:
                    continue
                work = Workload.of(
                    args.fleet,
                    args.trace,
                    utilisation=util,
                    seed=seed,
                    limit=args.limit,
                    telemetry_interval=args.telemetry_interval,
                    split=split,
                    all_mixed=all_mixed,
                    chunked_prefill=chunked,
                )
                report, result = work.run(policy, seed, False)
                rows[key] = {
                    "fleet": Path(args.fleet).stem,
                    "utilisation": util,
                    "seed": seed,
                    "arm": arm,
                    "requests": report["requests"],
                    "slo_attainment": report["slo_attainment"],
                    "ttft_mean_ms": report["ttft_ms"]["mean"],
                    "ttft_p95_ms": report["ttft_ms"]["p95"],
                    "e2e_p95_ms": report["e2e_ms"]["p95"],
                    "split_share": sum(p >= 0 for p in result.table.prefill_node)
                    / max(report["requests"], 1),
                    "wall_seconds": report["wall_seconds"],
                    "chunked_prefill": setting,
                }
                r = rows[key]
                print(
                    f"{key}: {r['slo_attainment']:.1%}, TTFT mean {r['ttft_mean_ms']:.0f} ms, "
                    f"p95 {r['ttft_p95_ms']:.0f} ms, split {r['split_share']:.0%} "
                    f"({r['wall_seconds']:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(pd_table(list(rows.values())))


if __name__ == "__main__":
    main()
