"""Does the console's attributed cost see what a policy really costs? The demo canary replayed
with both arms on one fleet (as tools/canary_split.py), each arm's cost per 1k requests
three ways, and the canary / active ratio of each:

- realized: the simulator's own accounting (prefill in full, decode shared by the batch it
  actually ran in, egress), the truth the console cannot see;
- estimated: the engine's decision-time estimate for the picked node (the receipt's
  `cost_usd`, what `GET /api/v1/rollout` reports as `estimated_usd_per_1k`);
- attributed: `optimizer.attribution` from what the console can measure (the decision's
  prefill estimate, the reported TTFT and end-to-end latency, and the node's running
  sequences as scraped every `--telemetry-interval` seconds): `attributed_usd_per_1k`.

    .venv/bin/python -m tools.cost_attribution \
        [--canary generalist] [--active weighted-score] [--seeds 0,1,...] [canary_split's options]

Served requests only (the ones with an outcome and a cost). Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from statistics import fmean

import numpy as np

from optimizer import argtypes
from optimizer.attribution import attributed_cost_usd, batch_during
from optimizer.commands.replay import Workload
from optimizer.decide.registry import load_policy
from optimizer.decide.scorers.base import Policy
from optimizer.decide.state.candidates import Candidates
from optimizer.decide.state.fleet import D_RUNNING, Fleet
from optimizer.sim import simulate
from optimizer.sim.requests import SERVED
from optimizer.sim.telemetry import TelemetryFeed, TelemetryModel
from tools.canary_split import SplitPolicy, arm_draws


@dataclass(frozen=True, slots=True)
class RecordingTelemetry(TelemetryModel):
    """Telemetry as the engine gets it, keeping each scrape's running sequences per node (the
    `running` series the console stores)."""

    samples: list[tuple[float, np.ndarray]] = field(default_factory=list)

    def start(self, fleet: Fleet, views: int = 1) -> TelemetryFeed:
        return _RecordingFeed(self, fleet, self.samples, views)


class _RecordingFeed(TelemetryFeed):
    def __init__(
        self,
        model: TelemetryModel,
        fleet: Fleet,
        samples: list[tuple[float, np.ndarray]],
        views: int = 1,
    ) -> None:
        super().__init__(model, fleet, views)
        self.samples = samples

    def take(self, dynamic: np.ndarray, now: float, answering: np.ndarray | None = None) -> int:
        self.samples.append((now, dynamic[:, D_RUNNING].copy()))
        return super().take(dynamic, now, answering)


class RecordingSplit(SplitPolicy):
    """canary_split's SplitPolicy, keeping each candidate's estimated cost and prefill time as
    the receipt would (by request id and node index)."""

    def __init__(self, canary: Policy, active: Policy, arms: dict[int, int]) -> None:
        super().__init__(canary, active, arms)
        self.estimates: dict[tuple[int, int], tuple[float, float]] = {}

    def score(self, c: Candidates) -> np.ndarray:
        est, key = c.est, id(c.request)
        for j, node in enumerate(c.index.tolist()):
            self.estimates[(key, node)] = (float(est.cost_usd[j]), float(est.prefill_s[j]))
        return super().score(c)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--canary", default="generalist")
    ap.add_argument("--active", default="weighted-score")
    ap.add_argument("--share", type=argtypes.fraction, default=0.5)
    ap.add_argument("--seeds", type=argtypes.naturals, default=list(range(8)))
    ap.add_argument("--topology", default="optimizer/topologies/fleet-demo.yaml")
    ap.add_argument("--trace", default="optimizer/data/traces/mooncake_synthetic.jsonl")
    ap.add_argument("--load", type=argtypes.positive, default=1.0)
    ap.add_argument("--telemetry-interval", type=argtypes.positive, default=10.0)
    args = ap.parse_args()

    ratios: dict[str, list[float]] = {"realized": [], "estimated": [], "attributed": []}
    levels: dict[str, list[tuple[float, float]]] = {k: [] for k in ratios}
    for seed in args.seeds:
        workload = Workload.of(
            args.topology,
            args.trace,
            load=args.load,
            seed=seed,
            telemetry_interval=args.telemetry_interval,
        )
        canary = arm_draws(seed, len(workload.requests), args.share)  # as canary_split.py
        arms = {id(r): int(d) for r, d in zip(workload.requests, canary, strict=True)}
        policy = RecordingSplit(
            load_policy(args.canary, workload.topology, seed),
            load_policy(args.active, workload.topology, seed),
            arms,
        )
        telemetry = RecordingTelemetry(args.telemetry_interval, seed=seed)
        result = simulate(
            workload.topology, policy, workload.requests, workload.arrival_s, telemetry=telemetry
        )
        costs = _costs(workload, result, policy, telemetry.samples)
        # Requests that finished before the first scrape have no batch to attribute by (NaN);
        # all three figures leave them out, so they compare the same requests.
        served = costs["served"].astype(bool) & np.isfinite(costs["attributed"])
        for name in ratios:
            c = float(costs[name][served & canary].mean()) * 1000
            a = float(costs[name][served & ~canary].mean()) * 1000
            levels[name].append((c, a))
            ratios[name].append(c / a)
        print(
            f"seed {seed}: "
            + ", ".join(f"{n} {levels[n][-1][0]:.3f}/{levels[n][-1][1]:.3f}" for n in ratios)
        )
    print(f"canary {args.canary} against active {args.active}, USD per 1k served requests:")
    for name, values in ratios.items():
        c, a = fmean(x for x, _ in levels[name]), fmean(y for _, y in levels[name])
        print(
            f"  {name:10s} canary {c:.3f}, active {a:.3f}: ratio {fmean(values):.3f}"
            f" (seeds from {min(values):.3f} to {max(values):.3f})"
        )


def _costs(
    workload: Workload,
    result: object,
    policy: RecordingSplit,
    samples: list[tuple[float, np.ndarray]],
) -> dict[str, np.ndarray]:
    table = result.table  # type: ignore[attr-defined]
    nodes = workload.topology.nodes
    times = [t for t, _ in samples]
    running = np.array([r for _, r in samples])
    n = len(workload.requests)
    out = {k: np.zeros(n) for k in ("served", "realized", "estimated", "attributed")}
    for rid, request in enumerate(workload.requests):
        node = table.node[rid]
        if node < 0 or table.status[rid] != SERVED:
            continue
        estimated, prefill_s = policy.estimates[(id(request), node)]
        first_token = table.arrival[rid] + table.ttft[rid]
        finish = table.arrival[rid] + table.e2e[rid]
        batch = batch_during(times, running[:, node].tolist(), first_token, finish)
        out["served"][rid] = 1
        out["realized"][rid] = table.cost[rid]
        out["estimated"][rid] = estimated
        out["attributed"][rid] = attributed_cost_usd(
            nodes[node].usd_per_hour, prefill_s, table.e2e[rid] - table.ttft[rid], batch
        )
    return out


if __name__ == "__main__":
    main()
