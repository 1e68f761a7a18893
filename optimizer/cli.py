"""`python -m optimizer`: simulate, evaluate, calibrate, list policies, benchmark.

Bad input files print `error: <message>` on stderr and exit with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from optimizer import argtypes
from optimizer.calibration.run import DEFAULT_MIN_SAMPLES
from optimizer.commands import heldout
from optimizer.commands.fleet import cmd_bench_decide, cmd_bench_scorer, cmd_gen_fleet
from optimizer.commands.replay import (
    cmd_bench,
    cmd_calibrate,
    cmd_evaluate,
    cmd_policies,
    cmd_simulate,
)
from optimizer.commands.serve import add_parser as add_serve_fleet
from optimizer.commands.training import cmd_train
from optimizer.decide.registry import POLICY_NAMES, SPLITTERS
from optimizer.decide.scorers.learned import DECISION_COST_WEIGHT, decision_cost_weight
from optimizer.errors import InputFileError
from optimizer.rl.teacher import SLO_AWARE, TEACHER_NAMES
from optimizer.sim.interference import ChunkedPrefill, parse_chunked_prefill
from optimizer.traces import SHIPPED_TRACES

_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TOPOLOGY = _ROOT / "optimizer" / "topologies" / "fleet-demo.yaml"
# The public traces shipped with the package (optimizer/data/traces/README.md).
DEFAULT_TRACES = (
    SHIPPED_TRACES / "mooncake_synthetic.jsonl",
    SHIPPED_TRACES / "azure_llm_2023_conv.csv",
)


def _decision_cost_weight(text: str) -> float:
    """`train --decision-cost-weight`: what policy.json accepts (0..1000)."""
    try:
        return decision_cost_weight({DECISION_COST_WEIGHT: argtypes.non_negative(text)})
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _common(parser: argparse.ArgumentParser, *, trace: bool = True) -> None:
    parser.add_argument(
        "--topology",
        required=trace,
        default=str(DEFAULT_TOPOLOGY),
        help="topology YAML (docs/contracts.md §1)",
    )
    if trace:
        parser.add_argument("--trace", required=True, help="Azure .csv or Mooncake .jsonl")
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument(
        "--load",
        type=argtypes.positive,
        default=1.0,
        help="scale the arrival rate (2 replays twice as fast)",
    )
    scale.add_argument(
        "--utilisation",
        type=argtypes.positive,
        default=None,
        help="offer this share of the fleet's serving capacity for the trace instead "
        "(1 = fluid saturation; docs/learned-policy.md)",
    )
    parser.add_argument(
        "--limit", type=argtypes.count, default=None, help="use the first N requests"
    )
    parser.add_argument(
        "--events", default=None, help="YAML/JSON schedule of drain/cordon/fail/recover events"
    )
    parser.add_argument(
        "--seed", type=argtypes.natural, default=0, help="seed for sources, models, policies"
    )
    parser.add_argument(
        "--telemetry-interval",
        type=argtypes.positive,
        default=None,
        metavar="S",
        help="policies see node state as the live engine does, through telemetry S seconds "
        "apart (docs/decision-kernel.md); default: the exact state",
    )
    parser.add_argument(
        "--stale-after",
        type=argtypes.positive,
        default=None,
        metavar="S",
        help="with --telemetry-interval, leave out nodes whose sample is older than S seconds "
        "while fresh ones remain, as the live engine does (default: off)",
    )
    parser.add_argument(
        "--deciders",
        type=argtypes.count,
        default=1,
        metavar="K",
        help="with --telemetry-interval, K deciders place the requests, each with its own view "
        "of its sends and prompt placements since the last scrape, all fed the same scrapes; "
        "requests are split by a hash of the trace line's `session` when it has one, else "
        "round-robin per request (docs/deploying.md; default: 1)",
    )
    parser.add_argument(
        "--shared-view",
        action="store_true",
        help="with --deciders K > 1, the K deciders share one view of sends and prefixes, as a "
        "shared view (Redis) gives, without its publish delay (default: each its own)",
    )
    parser.add_argument(
        "--split",
        choices=tuple(SPLITTERS),
        default=None,
        help="end every decision with this split stage, which may prefill a long prompt on "
        "one node and decode it on another (docs/simulation.md; default: one node each)",
    )
    parser.add_argument(
        "--all-mixed",
        action="store_true",
        help="run every node as mixed (both phases), ignoring the topology's prefill and "
        "decode roles: the same hardware without disaggregation (default: roles honoured)",
    )
    parser.add_argument(
        "--chunked-prefill",
        type=chunked_prefill,
        nargs="?",
        const=ChunkedPrefill(),
        default=None,
        metavar="TOKENS",
        help="nodes that run both phases interleave them as vLLM's chunked-prefill scheduler "
        "does: each step carries a decode round and a prefill chunk of up to TOKENS per GPU "
        "less the batch (default with no TOKENS: vLLM's, 8192 on GPUs of 70 GiB or more, "
        "else 2048; docs/simulation.md); default: off, a prefill runs alone and stalls decode",
    )
    parser.add_argument(
        "--breakers",
        action="store_true",
        help="run the live engine's per-node circuit breakers on this run's failures "
        "(default settings, docs/operations.md; default: off)",
    )


def chunked_prefill(text: str) -> ChunkedPrefill:
    """`--chunked-prefill`'s value: "vllm" or a token budget per GPU."""
    try:
        return parse_chunked_prefill(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m optimizer", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = commands.add_parser("simulate", help="replay a trace under one policy")
    _common(sim)
    sim.add_argument("--policy", required=True, help="built-in name or a train output dir")
    sim.add_argument("--report", help="write the JSON report here (default: stdout)")
    sim.add_argument(
        "--requests-out", help="write one observation per request here (JSONL, docs/twin.md)"
    )
    sim.set_defaults(func=cmd_simulate)

    cal = commands.add_parser(
        "calibrate", help="fit the topology's profiles and link RTTs to observations"
    )
    cal.add_argument("--topology", required=True, help="the nominal topology YAML")
    cal.add_argument("--observations", required=True, help="observations JSONL (docs/twin.md)")
    cal.add_argument("--out", required=True, help="write the calibrated topology YAML here")
    cal.add_argument("--report", required=True, help="write the JSON report here")
    cal.add_argument(
        "--min-samples",
        type=argtypes.count,
        default=DEFAULT_MIN_SAMPLES,
        help="measured requests a profile or link needs to be fitted",
    )
    cal.add_argument(
        "--fit-links", action="store_true", help="also fit the RTT of links with enough data"
    )
    cal.add_argument(
        "--seed", type=argtypes.natural, default=0, help="seed for drawn sources/models"
    )
    cal.add_argument(
        "--override",
        action="store_true",
        help="write --out even when the proposal does not improve the held-out errors "
        "(verdict no_improvement; docs/twin.md)",
    )
    cal.set_defaults(func=cmd_calibrate)

    ev = commands.add_parser("evaluate", help="compare policies on the same arrivals")
    _common(ev)
    ev.add_argument(
        "--policies",
        type=argtypes.names,
        default=list(POLICY_NAMES),
        help="comma-separated policies (default: every built-in)",
    )
    ev.add_argument("--report", required=True, help="JSON report; plots are written beside it")
    ev.set_defaults(func=cmd_evaluate)

    tr = commands.add_parser("train", help="train a PPO placement policy and export scorer.pt")
    tr.add_argument("--topology", required=True, help="topology YAML (docs/contracts.md §1)")
    tr.add_argument("--trace", required=True, help="training trace (.csv or .jsonl)")
    tr.add_argument(
        "--extra-topologies",
        nargs="*",
        default=[],
        help="more fleets to train on (each episode draws one; a generalist uses many)",
    )
    tr.add_argument(
        "--init",
        default=None,
        help="fine-tune from a trained policy: 'generalist' or a directory with weights.pt",
    )
    tr.add_argument(
        "--timesteps", type=argtypes.count, default=500_000, help="PPO steps (decisions)"
    )
    tr.add_argument("--out", required=True, help="output directory (scorer.pt, policy.json)")
    tr.add_argument("--seed", type=argtypes.natural, default=0, help="seed of everything random")
    tr.add_argument(
        "--teacher",
        default=SLO_AWARE,
        choices=TEACHER_NAMES,
        help="rule the warm start imitates: slo-aware, slo-e2e-aware (optimizer.rl.teacher) "
        "or a heuristic",
    )
    tr.add_argument(
        "--bc-steps", type=argtypes.natural, default=100_000, help="warm-start decisions (0: none)"
    )
    tr.add_argument(
        "--bc-epochs", type=argtypes.count, default=15, help="passes over the demonstrations"
    )
    tr.add_argument(
        "--cost-weight",
        type=argtypes.non_negative,
        default=None,
        help="reward per USD per 1k requests of each finished request (default: RewardConfig's)",
    )
    tr.add_argument(
        "--decision-cost-weight",
        type=_decision_cost_weight,
        default=None,
        help=(
            "logits one estimated USD per 1k requests costs when the exported scorer decides "
            "(policy.json decision_cost_weight; default: the --init policy's or 0, whichever "
            "validates the start better; 0 without --init)"
        ),
    )
    tr.add_argument(
        "--validate-every",
        type=argtypes.count,
        default=20_000,
        help="PPO steps between validations",
    )
    tr.add_argument(
        "--prompt-scale",
        type=argtypes.positive,
        nargs=2,
        metavar=("LOW", "HIGH"),
        default=[2.0, 12.0],
        help="range of the factor on the trace's prompt lengths per training episode and "
        "validation replay, drawn log-uniformly (default: 2 12; 1 12 keeps short prompts too)",
    )
    tr.add_argument(
        "--eval-trace",
        default=None,
        help="held-out trace for the final evaluation against every heuristic",
    )
    tr.add_argument(
        "--heldout-fine-tune",
        action="store_true",
        help="allow one held-out suite fleet (optimizer/topologies/heldout/), alone and with "
        "--init: the suite's fine-tuned row; never ship or select with its output",
    )
    tr.add_argument("--eval-loads", type=argtypes.positives, default=[1.0, 3.5], help="e.g. 1,3.5")
    tr.add_argument("--eval-seeds", type=argtypes.naturals, default=[0, 1, 2], help="e.g. 0,1,2")
    tr.set_defaults(func=cmd_train)

    bs = commands.add_parser(
        "bench-scorer", help="scorer.pt latency at 8/64/256 candidates vs the heuristics"
    )
    bs.add_argument("--topology", default=str(DEFAULT_TOPOLOGY), help="topology YAML")
    bs.add_argument("--policy", required=True, help="a directory written by train")
    bs.add_argument(
        "--repeats", type=argtypes.count, default=2000, help="timed calls per measurement"
    )
    bs.add_argument("--seed", type=argtypes.natural, default=0, help="accepted for uniformity")
    bs.set_defaults(func=cmd_bench_scorer)

    bd = commands.add_parser(
        "bench-decide",
        help="decision µs p50/p99 at 8/64/256/1000 candidates: kernel vs per-node reference",
    )
    bd.add_argument("--topology", default=str(DEFAULT_TOPOLOGY), help="topology YAML")
    bd.add_argument("--policy", default=None, help="a directory written by train (optional)")
    bd.add_argument("--json", action="store_true", help="print the figures as JSON")
    bd.add_argument(
        "--repeats", type=argtypes.count, default=300, help="timed decisions per figure"
    )
    bd.add_argument(
        "--cpu-time",
        action="store_true",
        help="time the process's CPU time, leaving out waits for a core (shared machines)",
    )
    bd.add_argument("--seed", type=argtypes.natural, default=0, help="seed of the random states")
    bd.add_argument(
        "--split",
        choices=tuple(SPLITTERS),
        default=None,
        help="also time decisions ending with this split stage on a long prompt",
    )
    bd.set_defaults(func=cmd_bench_decide)

    gen = commands.add_parser(
        "gen-fleet", help="write a valid, realistic generated topology (docs/learned-policy.md)"
    )
    gen.add_argument("--nodes", type=argtypes.count, required=True, help="number of nodes (>= 1)")
    gen.add_argument("--sites", type=argtypes.count, required=True, help="number of sites (>= 1)")
    gen.add_argument(
        "--seed", type=argtypes.natural, default=0, help="the same seed writes the same file"
    )
    gen.add_argument(
        "--slo-scale",
        type=argtypes.positive,
        default=1.0,
        help="multiply the SLO classes' latency targets (before they are raised to what the "
        "fleet attains unloaded): 0.5 draws tight SLOs (default: 1)",
    )
    gen.add_argument("--out", required=True, help="topology YAML to write")
    gen.set_defaults(func=cmd_gen_fleet)

    heldout.add_parser(commands)

    pol = commands.add_parser("policies", help="list the built-in policies and the generalist")
    pol.add_argument("--seed", type=argtypes.natural, default=0, help="accepted for uniformity")
    pol.set_defaults(func=cmd_policies)

    add_serve_fleet(commands)

    bench = commands.add_parser("bench", help="print sim_speedup per policy and trace")
    _common(bench, trace=False)
    bench.add_argument("--traces", nargs="+", default=[str(p) for p in DEFAULT_TRACES])
    bench.add_argument("--policies", type=argtypes.names, default=list(POLICY_NAMES))
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except InputFileError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
