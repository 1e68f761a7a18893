"""What explaining a learned decision costs: the shipped generalist's decision through the
pipeline against `pick_attribution` (integrated gradients, optimizer/decide/explain_learned.py)
on the same candidates, for each model of the demo fleet, idle nodes.

    .venv/bin/python tests/bench/bench_learned_why.py [--repeat 2000] [--json PATH]

Pure optimizer code in-process; prints medians of `--repeat` calls, asserts nothing. The
attribution runs for one learned decision in LOCUS_LEARNED_EXPLAIN_EVERY, so its average cost
per decision is its time divided by that. `--json PATH` also writes the rows as JSON, the
report docs/results/ renders (tools/results/serving.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from optimizer.decide.explain_learned import pick_attribution
from optimizer.decide.pipeline import Pipeline
from optimizer.decide.registry import get_filter, load_policy
from optimizer.decide.request import placement_request
from optimizer.decide.scorers.learned import TrainedPolicy
from optimizer.decide.state.fleet import DYNAMIC_COLUMNS, Fleet
from optimizer.topology_files import load_topology

FLEET = Path(__file__).resolve().parents[2] / "optimizer" / "topologies" / "fleet-demo.yaml"


def _median_us(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    fleet = Fleet(load_topology(FLEET))
    topology = fleet.topology
    policy = load_policy("generalist", topology)
    assert isinstance(policy, TrainedPolicy)
    pipeline = Pipeline([get_filter("constraints")])
    dynamic = np.zeros((fleet.size, DYNAMIC_COLUMNS))
    source = topology.sources[0]
    rows = []
    print(f"{'model':<24} {'candidates':>10} {'decide µs':>10} {'explain µs':>11}")
    for model in topology.models:
        request = placement_request(
            topology, model=model.name, source_site=source.site, slo=source.slo,
            prompt_tokens=2000, max_output_tokens=256,
        )  # fmt: skip
        choice = pipeline.decide(fleet, request, dynamic, None, policy, 5)
        if len(choice.order) < 2 or choice.scores is None:
            continue
        scores, order = choice.scores, choice.order
        decide = _median_us(
            partial(pipeline.decide, fleet, request, dynamic, None, policy, 5), args.repeat
        )
        explain = _median_us(
            partial(pick_attribution, policy, choice.candidates, scores, order), args.repeat
        )
        print(
            f"{model.name:<24} {len(choice.candidates.names):>10} {decide:>10.0f} {explain:>11.0f}"
        )
        rows.append(
            {"model": model.name, "candidates": len(choice.candidates.names),
             "decide_us": decide, "explain_us": explain}
        )  # fmt: skip
    if args.json is not None:
        report = {"fleet": FLEET.name, "repeat": args.repeat, "rows": rows}
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
