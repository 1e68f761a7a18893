"""Why the demo canary lost (issue #18 item 3): policies on exact node state vs stale state.

    .venv/bin/python tests/bench/canary_probe.py [--interval 10] [--limit 2000] [--seed 0] \
        [--policies optimizer/policies/trained/ppo-fleet-demo,weighted-score]

Replays the Mooncake trace at 1x on fleet-demo under each policy three ways:
- `exact`: the simulator's instantaneous node state (what training saw);
- `no-queued-tokens`: views as the live engine builds them from telemetry, which carries no
  queued prompt tokens (console/placement/engine/core.py `_base_views`);
- `stale`: as well, running sequences, KV use and queue depth from a per-node snapshot taken
  at most every `--interval` simulated seconds (the demo scrapes every 10 s), plus the
  policy's own sends since that snapshot added to the queue depth (the engine's in-flight
  accounting, `_live_view`).
Prints attainment, p95 TTFT, cost, the share sent to the Jetson Orin device nodes, and for
the first policy where its misses are. A probe for the analysis in docs/learned-policy.md,
not a model of telemetry: issue #18 item 2 gives the simulator `--telemetry-interval` with
the engine's own code, which supersedes this.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from optimizer.decision import NodeView, PlacementRequest  # noqa: E402
from optimizer.policies import load_policy  # noqa: E402
from optimizer.policies.base import Policy  # noqa: E402
from optimizer.report import build_report, slo_met  # noqa: E402
from optimizer.sim import Simulator  # noqa: E402
from optimizer.topology import Topology, load_topology  # noqa: E402
from optimizer.traces import draw_requests, load_trace  # noqa: E402


class LiveViews(Policy):
    """`inner` deciding on views degraded as described in the module docstring."""

    def __init__(self, inner: Policy, stale: bool, interval: float) -> None:
        self.inner, self.stale, self.interval = inner, stale, interval
        self.name = getattr(inner, "name", "policy")
        self.snapshot: dict[str, tuple[float, int, int, int]] = {}
        self.sent: Counter[str] = Counter()
        self.sim: Simulator | None = None

    def scores(
        self, request: PlacementRequest, candidates: Sequence[NodeView], topology: Topology
    ) -> np.ndarray:
        assert self.sim is not None
        now, views = self.sim.now, []
        for c in candidates:
            view = dataclasses.replace(c, queued_prompt_tokens=0)
            if self.stale:
                taken, kv, queue, running = self.snapshot.get(c.name, (-1e18, 0, 0, 0))
                if now - taken >= self.interval:
                    taken, kv, queue, running = now, c.kv_used_bytes, c.queue_depth, c.running
                    self.snapshot[c.name] = (taken, kv, queue, running)
                    self.sent[c.name] = 0
                view = dataclasses.replace(
                    view, kv_used_bytes=kv, queue_depth=queue + self.sent[c.name], running=running
                )
            views.append(view)
        scores = np.asarray(self.inner.scores(request, views, topology), dtype=np.float64)
        self.sent[candidates[int(np.argmax(scores))].name] += 1
        return scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--policies", default="optimizer/policies/trained/ppo-fleet-demo,weighted-score"
    )
    args = parser.parse_args()
    topology = load_topology(REPO / "optimizer/topologies/fleet-demo.yaml")
    trace = load_trace(REPO / "optimizer/data/traces/mooncake_synthetic.jsonl", limit=args.limit)
    requests = draw_requests(trace, topology, args.seed)
    arrivals = [r.arrival_s for r in trace]
    names = [n.name for n in topology.nodes]
    specs = args.policies.split(",")
    for spec in specs:
        for mode in ("exact", "no-queued-tokens", "stale"):
            inner = load_policy(spec, topology, args.seed)
            policy = inner if mode == "exact" else LiveViews(inner, mode == "stale", args.interval)
            sim = Simulator(topology, policy, requests, arrivals)
            if isinstance(policy, LiveViews):
                policy.sim = sim
            result = sim.run()
            report = build_report(result, topology, spec)
            nodes = result.table.node
            orin = sum(1 for n in nodes if n >= 0 and "orin" in names[n]) / len(requests)
            print(
                f"{Path(spec).name:<16}{mode:<18}attainment {report['slo_attainment']:.2%}  "
                f"TTFT p95 {report['ttft_ms']['p95']:>6.0f} ms  "
                f"$/1k {report['cost_per_1k_requests']:.3f}  to Orin nodes {orin:.1%}"
            )
            if spec == specs[0] and mode != "no-queued-tokens":
                met = slo_met(result, topology)
                misses = Counter(
                    names[nodes[i]] if nodes[i] >= 0 else "rejected"
                    for i in range(len(requests))
                    if not met[i]
                )
                on_orin = sum(v for k, v in misses.items() if "orin" in k)
                print(f"    {sum(misses.values())} misses, {on_orin} on Orin nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
