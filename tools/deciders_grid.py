"""What several deciders lose without a shared view (issue #29 item 1): a grid of replays.

    nice .venv/bin/python -m tools.deciders_grid \
        [--fleets optimizer/topologies/fleet-demo.yaml,var/deciders/fleet-200.yaml] \
        [--trace optimizer/data/traces/mooncake_synthetic.jsonl] [--limit 3000] \
        [--utilisations 0.9,1.5] [--telemetry-interval 10] \
        [--policies weighted-score,generalist] [--deciders 1,4,8] [--seeds 0,1,2] \
        [--out var/deciders/grid.json]

For every fleet, utilisation, seed, policy and K it replays the trace as
`python -m optimizer simulate --telemetry-interval S --deciders K [--shared-view]` does (the same
`Workload`), once with K independent deciders and, for K > 1, once with a shared view. The
default 200-node fleet is written first when it is missing (`gen-fleet --nodes 200 --sites 20
--seed 0`). Each finished replay is saved to `--out` at once, and a rerun with the same `--out`
skips the replays already there, so an interrupted grid resumes.

Prints a Markdown table (`tools.results.render.deciders_table`; docs/results/deciders.md is
the same table from the committed report): per fleet, utilisation, policy and K, the mean over
the seeds of SLO attainment, mean TTFT and prefix hit rate, independent and shared, with
attainment's change from K = 1 in points. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from optimizer.commands.replay import Workload
from tools.results.render import deciders_table

DEMO = "optimizer/topologies/fleet-demo.yaml"
FLEET_200 = "var/deciders/fleet-200.yaml"


def _list(text: str, kind: type) -> list[Any]:
    return [kind(v) for v in text.split(",") if v.strip()]


def _ensure_fleet(path: str) -> None:
    """Write the default generated fleet when it is missing (any other fleet must exist)."""
    if Path(path).exists() or path != FLEET_200:
        return
    from optimizer.fleetgen import fleet_yaml, generate_fleet

    topology = generate_fleet(200, 20, 0)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(fleet_yaml(topology, 200, 20, 0), encoding="utf-8")


def _key(fleet: str, util: float, seed: int, policy: str, k: int, shared: bool) -> str:
    return f"{Path(fleet).stem}|{util:g}|{seed}|{policy}|{k}|{'shared' if shared else 'own'}"


def _replay(args: argparse.Namespace, fleet: str, util: float, seed: int, k: int, shared: bool,
            policy: str) -> dict[str, Any]:  # fmt: skip
    work = Workload.of(
        fleet,
        args.trace,
        utilisation=util,
        seed=seed,
        limit=args.limit,
        telemetry_interval=args.telemetry_interval,
        deciders=k,
        shared_view=shared,
    )
    report, _ = work.run(policy, seed, False)
    return {
        "fleet": Path(fleet).stem,
        "utilisation": util,
        "seed": seed,
        "policy": policy,
        "deciders": k,
        "shared_view": shared,
        "split": work.deciders.split if work.deciders is not None else "one decider",
        "slo_attainment": report["slo_attainment"],
        "ttft_mean_ms": report["ttft_ms"]["mean"],
        "prefix_hit_rate": report["prefix_hit_rate"],
        "rejected": report["rejected"],
        "wall_seconds": report["wall_seconds"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fleets", default=f"{DEMO},{FLEET_200}")
    ap.add_argument("--trace", default="optimizer/data/traces/mooncake_synthetic.jsonl")
    ap.add_argument("--limit", type=int, default=3000)
    ap.add_argument("--utilisations", default="0.9,1.5")
    ap.add_argument("--telemetry-interval", type=float, default=10.0)
    ap.add_argument("--policies", default="weighted-score,generalist")
    ap.add_argument("--deciders", default="1,4,8")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", default="var/deciders/grid.json")
    args = ap.parse_args()
    fleets = _list(args.fleets, str)
    utils = _list(args.utilisations, float)
    policies = _list(args.policies, str)
    counts = _list(args.deciders, int)
    seeds = _list(args.seeds, int)
    if any(k < 1 for k in counts):
        ap.error("--deciders: every K must be at least 1")
    out = Path(args.out)
    rows: dict[str, dict[str, Any]] = json.loads(out.read_text()) if out.exists() else {}
    for fleet in fleets:
        _ensure_fleet(fleet)
    # Seeds outermost, so an interrupted grid has whole seeds done.
    for seed in seeds:
        for fleet in fleets:
            for util in utils:
                for policy in policies:
                    for k in counts:
                        for shared in (False, True) if k > 1 else (False,):
                            key = _key(fleet, util, seed, policy, k, shared)
                            if key in rows:
                                continue
                            rows[key] = _replay(args, fleet, util, seed, k, shared, policy)
                            r = rows[key]
                            print(
                                f"{key}: {r['slo_attainment']:.1%}, TTFT "
                                f"{r['ttft_mean_ms']:.0f} ms, hit {r['prefix_hit_rate']:.3f} "
                                f"({r['wall_seconds']:.0f} s)",
                                file=sys.stderr,
                                flush=True,
                            )
                            out.parent.mkdir(parents=True, exist_ok=True)
                            out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(deciders_table(list(rows.values())))


if __name__ == "__main__":
    main()
