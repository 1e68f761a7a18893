"""Where each policy's money goes: requests, USD per 1k and SLO misses by model and node.

    .venv/bin/python -m tools.cost_by_node \
        [--topology T.yaml] [--trace X] [--load 1] [--telemetry-interval 10] [--seed 0] \
        [--policies generalist,weighted-score]

Defaults are the demo canary's offline proxy (fleet-demo, the Mooncake trace at 1x, 10 s
telemetry; docs/learned-policy.md "The live canary"). Replays the trace once per policy on the
same arrivals, as `python -m optimizer evaluate` does, and prints per model the total, then its
nodes by cost (each request pays its node's price over its prefill plus 1/batch of every decode
step it shares, `optimizer.sim`). Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from optimizer.commands.replay import Workload
from optimizer.report import slo_met


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="optimizer/topologies/fleet-demo.yaml")
    ap.add_argument("--trace", default="optimizer/data/traces/mooncake_synthetic.jsonl")
    ap.add_argument("--load", type=float, default=1.0)
    ap.add_argument("--telemetry-interval", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policies", default="generalist,weighted-score")
    args = ap.parse_args()
    workload = Workload.of(
        args.topology,
        args.trace,
        load=args.load,
        seed=args.seed,
        telemetry_interval=args.telemetry_interval,
    )
    models = [r.model for r in workload.requests]
    for spec in args.policies.split(","):
        report, result = workload.run(spec, args.seed, False)
        table, met = result.table, slo_met(result, workload.topology)
        cells: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0])
        for rid, node in enumerate(table.node):
            name = result.nodes[node].name if node >= 0 else "(rejected)"
            cell = cells[(models[rid], name)]
            cell[0] += 1
            cell[1] += table.cost[rid]
            cell[2] += int(not met[rid])
        print(
            f"{spec}: SLO attainment {report['slo_attainment']:.2%}, "
            f"USD/1k {report['cost_per_1k_requests']:.3f}"
        )
        for model in sorted({m for m, _ in cells}):
            rows = {n: v for (m, n), v in cells.items() if m == model}
            n, usd, miss = (sum(v[i] for v in rows.values()) for i in range(3))
            print(
                f"  {model}: {n:.0f} requests, USD {usd:.3f} ({1000 * usd / n:.2f}/1k), "
                f"{miss:.0f} misses"
            )
            for node_name, (k, c, m) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
                print(
                    f"    {node_name:18s} {k:5.0f} requests  {1000 * c / k:7.2f} USD/1k  "
                    f"{m:3.0f} misses"
                )


if __name__ == "__main__":
    main()
