"""The demo canary replayed offline with both arms on one fleet: each request goes to the
canary policy with probability `--share`, else to the active one, and each arm's attainment
and cost are reported apart, as `GET /api/v1/rollout` reports a live canary.

    .venv/bin/python -m tools.canary_split \
        [--canary generalist] [--active weighted-score] [--share 0.5] [--seeds 0,1,2] \
        [--topology T.yaml] [--trace X] [--load 1 | --utilisation U] [--limit N]
        [--telemetry-interval 10] [--by-model]

Defaults are the demo canary's offline proxy (docs/learned-policy.md, "The live canary").
`python -m optimizer evaluate` replays each policy alone on the whole fleet; a live canary
shares the nodes with the active arm, so each arm's decisions change the state the other
decides on. The live engine routes by a hash of the request's session (sticky); the replay
draws the arm per request from the seed. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
from statistics import fmean, pstdev

import numpy as np

from optimizer import argtypes
from optimizer.commands.replay import Workload
from optimizer.decide.registry import load_policy
from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.report import slo_met
from optimizer.sim import simulate
from optimizer.sim.telemetry import TelemetryModel
from optimizer.stats import difference_interval

_ARM_STREAM = 0xCA9A27


def arm_draws(seed: int, requests: int, share: float) -> np.ndarray:
    """Which requests the canary serves (True), each with probability `share`. A stream of
    its own: `draw_requests` draws models and sources from default_rng(seed), and arms drawn
    from the same stream would split the requests by model."""
    return np.random.default_rng((seed, _ARM_STREAM)).random(requests) < share


class SplitPolicy(Policy):
    """Scores each request with the policy of its arm (`arms[id(request)]`: 1 canary)."""

    name = "split"

    def __init__(self, canary: Policy, active: Policy, arms: dict[int, int]) -> None:
        self.canary, self.active, self.arms = canary, active, arms

    def score(self, c: Candidates) -> np.ndarray:
        arm = self.arms[id(c.request)]
        return (self.canary if arm else self.active).score(c)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--canary", default="generalist")
    ap.add_argument("--active", default="weighted-score")
    ap.add_argument("--share", type=argtypes.fraction, default=0.5)
    ap.add_argument("--seeds", type=argtypes.naturals, default=[0, 1, 2])
    ap.add_argument("--topology", default="optimizer/topologies/fleet-demo.yaml")
    ap.add_argument("--trace", default="optimizer/data/traces/mooncake_synthetic.jsonl")
    scale = ap.add_mutually_exclusive_group()
    scale.add_argument("--load", type=argtypes.positive, default=None)
    scale.add_argument("--utilisation", type=argtypes.positive, default=None)
    ap.add_argument("--limit", type=argtypes.count, default=None)
    ap.add_argument("--telemetry-interval", type=argtypes.positive, default=10.0)
    ap.add_argument("--by-model", action="store_true", help="each arm's figures per model too")
    args = ap.parse_args()
    if args.load is None and args.utilisation is None:
        args.load = 1.0

    rows: dict[str, list[tuple[float, float]]] = {"canary": [], "active": [], "fleet": []}
    intervals: list[tuple[float, float]] = []  # the rollout API's 95% interval, per seed
    for seed in args.seeds:
        workload = Workload.of(
            args.topology,
            args.trace,
            load=args.load,
            utilisation=args.utilisation,
            seed=seed,
            limit=args.limit,
            telemetry_interval=args.telemetry_interval,
        )
        draws = arm_draws(seed, len(workload.requests), args.share)
        arms = {id(r): int(d) for r, d in zip(workload.requests, draws, strict=True)}
        policy = SplitPolicy(
            load_policy(args.canary, workload.topology, seed),
            load_policy(args.active, workload.topology, seed),
            arms,
        )
        result = simulate(
            workload.topology,
            policy,
            workload.requests,
            workload.arrival_s,
            telemetry=TelemetryModel(args.telemetry_interval, seed=seed),
        )
        met = np.asarray(slo_met(result, workload.topology), dtype=bool)
        cost = np.asarray(result.table.cost, dtype=np.float64)
        for name, mask in (("canary", draws), ("active", ~draws)):
            rows[name].append((100 * met[mask].mean(), 1000 * cost[mask].mean()))
        rows["fleet"].append((100 * met.mean(), 1000 * cost.mean()))
        low, high = difference_interval(
            int(met[draws].sum()), int(draws.sum()), int(met[~draws].sum()), int((~draws).sum())
        )
        intervals.append((100 * low, 100 * high))
        if args.by_model:
            _print_by_model(workload, result.table.model, draws, met, cost)
        print(
            f"seed {seed}: canary {rows['canary'][-1][0]:.2f}% {rows['canary'][-1][1]:.3f} USD/1k"
            f" ({draws.sum()} requests), active {rows['active'][-1][0]:.2f}%"
            f" {rows['active'][-1][1]:.3f} USD/1k"
        )
    # The whole fleet's figures tell a canary that is worse for its own requests from one that
    # leaves the other arm better off: compare them with the null (`--canary` = `--active`).
    labels = (("canary", args.canary), ("active", args.active), ("fleet", "both arms"))
    for name, spec in labels:
        att, usd = [a for a, _ in rows[name]], [c for _, c in rows[name]]
        print(
            f"{name} ({spec}): SLO attainment {fmean(att):.2f} ± {pstdev(att):.2f}%, "
            f"{fmean(usd):.3f} ± {pstdev(usd):.3f} USD/1k"
        )
    gap = [c[0] - a[0] for c, a in zip(rows["canary"], rows["active"], strict=True)]
    ratio = [c[1] / a[1] for c, a in zip(rows["canary"], rows["active"], strict=True)]
    print(f"canary - active: {fmean(gap):+.2f} pt, cost {fmean(ratio):.3f}x")
    # How the rollout API's interval (independent outcomes) compares with the seeds' spread.
    covered = sum(low <= fmean(gap) <= high for low, high in intervals)
    half = fmean((high - low) / 2 for low, high in intervals)
    print(
        f"95% interval (rollout API): mean half-width {half:.2f} pt against 1.96 x the seeds'"
        f" sd {1.96 * pstdev(gap):.2f}; covers the mean difference in {covered} of"
        f" {len(intervals)} seeds"
    )


def _print_by_model(
    workload: Workload, model: list[int], draws: np.ndarray, met: np.ndarray, cost: np.ndarray
) -> None:
    models = np.asarray(model)
    for index, name in enumerate(m.name for m in workload.topology.models):
        parts = []
        for arm, mask in (("canary", draws), ("active", ~draws)):
            sel = mask & (models == index)
            if sel.any():
                parts.append(
                    f"{arm} {100 * met[sel].mean():.2f}% {1000 * cost[sel].mean():.3f} USD/1k"
                    f" ({sel.sum()})"
                )
        print(f"  {name}: " + ", ".join(parts))


if __name__ == "__main__":
    main()
