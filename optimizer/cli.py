"""`python -m optimizer`: simulate, evaluate, calibrate, list policies, benchmark.

Bad input files print `error: <message>` on stderr and exit with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from optimizer.calibration.run import DEFAULT_MIN_SAMPLES
from optimizer.capacity import FleetCapacity, TokenMix, load_for_utilisation, utilisation_of_load
from optimizer.decision import PlacementRequest
from optimizer.errors import InputFileError
from optimizer.observations import load_observations, simulated_observations, write_observations
from optimizer.oracle import oracle_report
from optimizer.policies import GENERALIST, POLICY_NAMES, load_policy
from optimizer.report import build_report, format_table
from optimizer.sim import ScheduledEvent, SimResult, TelemetryModel, load_schedule, simulate
from optimizer.topology import Topology
from optimizer.topology_files import dump_topology, load_topology
from optimizer.traces import SHIPPED_TRACES, draw_requests, load_trace

_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TOPOLOGY = _ROOT / "optimizer" / "topologies" / "fleet-demo.yaml"
# The public traces shipped with the package (optimizer/data/traces/README.md).
DEFAULT_TRACES = (
    SHIPPED_TRACES / "mooncake_synthetic.jsonl",
    SHIPPED_TRACES / "azure_llm_2023_conv.csv",
)


class Workload:
    """A topology, the arrivals of one trace with their drawn sources and models, and events."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.topology: Topology = load_topology(args.topology)
        unscaled = load_trace(args.trace, limit=args.limit)
        capacity = FleetCapacity(self.topology)
        mix = TokenMix.of(unscaled) if unscaled else None
        if args.utilisation is not None and mix is not None:
            try:
                args.load = load_for_utilisation(capacity, mix, args.utilisation)
            except ValueError as exc:
                raise InputFileError(args.topology, [f"{args.topology}: {exc}"]) from exc
        self.load: float = args.load
        self.utilisation = utilisation_of_load(capacity, mix, args.load) if mix else 0.0
        trace = load_trace(args.trace, limit=args.limit, load=args.load)
        self.trace_name = Path(args.trace).name
        self.arrival_s = [r.arrival_s for r in trace]
        self.requests: list[PlacementRequest] = draw_requests(trace, self.topology, args.seed)
        self.events: list[ScheduledEvent] = (
            load_schedule(args.events, self.topology) if args.events else []
        )
        self.telemetry_interval: float | None = args.telemetry_interval

    def run(self, spec: str, seed: int, progress: bool) -> tuple[dict[str, Any], SimResult]:
        policy = load_policy(spec, self.topology, seed)
        telemetry = (
            TelemetryModel(self.telemetry_interval, seed=seed)
            if self.telemetry_interval is not None
            else None
        )
        result = simulate(
            self.topology,
            policy,
            self.requests,
            self.arrival_s,
            events=self.events,
            telemetry=telemetry,
            progress=progress,
            desc=spec,
        )
        return build_report(result, self.topology, spec), result


def _progress() -> bool:
    return sys.stderr.isatty()


def _write_json(path: Path, data: dict[str, Any]) -> None:
    # allow_nan=False: a report is JSON (docs/contracts.md §3), and NaN or Infinity are not.
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputFileError(
            str(path), [f"{path}: cannot write the report: {exc.strerror}"]
        ) from exc


def _write_observations(path: Path, result: SimResult, topology: Topology) -> None:
    """One observation line per request (docs/contracts.md §5)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as out:
            write_observations(out, simulated_observations(result, topology))
    except OSError as exc:
        raise InputFileError(str(path), [f"{path}: cannot write: {exc.strerror}"]) from exc


def cmd_calibrate(args: argparse.Namespace) -> int:
    from optimizer.calibration import calibrate

    nominal = load_topology(args.topology)
    observations = load_observations(args.observations, nominal, seed=args.seed)
    result = calibrate(
        nominal, observations, min_samples=args.min_samples, fit_links=args.fit_links
    )
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dump_topology(result.topology), encoding="utf-8")
    except OSError as exc:
        raise InputFileError(str(out), [f"{out}: cannot write: {exc.strerror}"]) from exc
    _write_json(Path(args.report), result.report)
    fid = result.report["fidelity"]
    for when in ("before", "after"):
        print(
            f"{when:<7} TTFT median/p95 error {fid[when]['ttft']['median_abs_rel_error']:.1%}"
            f" / {fid[when]['ttft']['p95_abs_rel_error']:.1%}, E2E"
            f" {fid[when]['e2e']['median_abs_rel_error']:.1%}"
            f" / {fid[when]['e2e']['p95_abs_rel_error']:.1%}"
        )
    unfitted = result.report["unfitted_profiles"]
    if unfitted:
        print(f"kept nominal (too little data): {', '.join(unfitted)}")
    print(f"wrote {out} and {args.report}")
    return 0


def _policy_list(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of policies")
    return names


def cmd_simulate(args: argparse.Namespace) -> int:
    work = Workload(args)
    report, result = work.run(args.policy, args.seed, _progress())
    report.update(
        trace=work.trace_name,
        load=work.load,
        utilisation=work.utilisation,
        seed=args.seed,
        telemetry_interval_s=args.telemetry_interval,
    )
    if args.requests_out:
        _write_observations(Path(args.requests_out), result, work.topology)
    if args.report:
        _write_json(Path(args.report), report)
    else:
        print(json.dumps(report, indent=2, allow_nan=False))
    print(format_table({args.policy: report}, None), file=sys.stderr)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from optimizer.plots import write_plots  # matplotlib is slow to import; only here

    work = Workload(args)
    policies: dict[str, dict[str, Any]] = {}
    ttft: dict[str, np.ndarray] = {}
    for spec in args.policies:
        report, result = work.run(spec, args.seed, _progress())
        policies[spec] = report
        served = np.array(result.table.status) == 1
        ttft[spec] = np.array(result.table.ttft)[served]
    oracle = oracle_report(work.topology, work.requests)
    out = {
        "policies": policies,
        "oracle": oracle,
        "trace": work.trace_name,
        "load": work.load,
        "utilisation": work.utilisation,
        "seed": args.seed,
        "telemetry_interval_s": args.telemetry_interval,
    }
    report_path = Path(args.report)
    _write_json(report_path, out)
    title = f"{work.trace_name} at load {work.load:.3g}x (utilisation {work.utilisation:.2f})"
    plots = write_plots(report_path, ttft, policies, oracle, title)
    print(title)
    print(format_table(policies, oracle))
    print(f"report: {report_path}; plots: {plots[0]}, {plots[1]}")
    return 0


def cmd_policies(args: argparse.Namespace) -> int:
    # The heuristics, then the shipped learned policy, which `--policy` also takes by name.
    print("\n".join([*POLICY_NAMES, GENERALIST]))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    rows: list[tuple[str, str, float, float, float]] = []
    for trace in args.traces:
        args.trace = trace
        work = Workload(args)
        for spec in args.policies:
            report, _ = work.run(spec, args.seed, _progress())
            rows.append(
                (
                    work.trace_name,
                    spec,
                    report["sim_seconds"],
                    report["wall_seconds"],
                    report["sim_speedup"],
                )
            )
    print(f"topology: {args.topology} ({len(work.topology.nodes)} nodes), load {args.load:g}x")
    print(f"{'trace':<28}{'policy':<16}{'sim s':>9}{'wall s':>9}{'sim_speedup':>13}")
    for trace_name, spec, sim_s, wall_s, speedup in rows:
        print(f"{trace_name:<28}{spec:<16}{sim_s:>9.0f}{wall_s:>9.2f}{speedup:>12.0f}x")
    return 0


def _format_progress(metrics: dict[str, Any]) -> str | None:
    """A line for the training log: baselines, validations and the end of imitation."""
    if metrics["phase"] == "baselines":
        return (
            f"baselines on validation (load {metrics['validation_load']:.3g}x on average, "
            f"utilisations {', '.join(f'{u:g}' for u in metrics['validation_utilisations'])}): "
            f"teacher {metrics['teacher_attainment']:.2%}, best heuristic "
            f"{metrics['best_heuristic']} {metrics['best_heuristic_attainment']:.2%}"
        )
    if metrics.get("event") != "validation":
        return None
    return (
        f"validation at {metrics['timesteps']}: attainment {metrics['slo_attainment']:.2%} "
        f"(teacher {metrics['teacher_attainment']:.2%}, best heuristic "
        f"{metrics['best_heuristic_attainment']:.2%}), p95 TTFT {metrics['ttft_p95_ms']:.0f} ms, "
        f"mean TTFT excess {metrics['ttft_mean_excess']:.3f}, "
        f"$/1k {metrics['cost_per_1k_requests']:.3f} (excess {metrics['cost_excess']:.3f}), "
        f"score {metrics['validation_score']:.4f}" + (" (best)" if metrics["best"] else "")
    )


def cmd_train(args: argparse.Namespace) -> int:
    # Imported here: torch and stable-baselines3 are slow to import and only training needs them.
    from tqdm import tqdm

    from optimizer.rl.train import TrainConfig, train

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputFileError(args.out, [f"{out}: --out must be a directory, and this is a file"])
    config = TrainConfig(
        topology=args.topology,
        trace=args.trace,
        out=args.out,
        extra_topologies=tuple(args.extra_topologies),
        init=args.init,
        timesteps=args.timesteps,
        seed=args.seed,
        teacher=args.teacher,
        bc_steps=args.bc_steps,
        bc_epochs=args.bc_epochs,
        validate_every=args.validate_every,
        eval_trace=args.eval_trace,
        eval_loads=tuple(args.eval_loads),
        eval_seeds=tuple(args.eval_seeds),
    )
    if args.cost_weight is not None:
        config.reward = dataclasses.replace(config.reward, cost_weight=args.cost_weight)
    bar = tqdm(total=1000, desc="train", unit="‰", disable=not _progress(), leave=False)

    def progress(fraction: float, metrics: dict[str, Any]) -> None:
        bar.update(int(fraction * 1000) - bar.n)
        if "approx_kl" in metrics:
            bar.set_postfix(
                steps=metrics["timesteps"],
                kl=f"{metrics['approx_kl']:.4f}",
                sps=f"{metrics['steps_per_s']:.0f}",
                refresh=False,
            )
        line = _format_progress(metrics)
        if line is not None:
            bar.write(line)

    result = train(config, progress)
    bar.close()
    if result.evaluation is not None:
        from optimizer.rl.evaluate import format_evaluation

        print(format_evaluation(result.evaluation))
    if result.below_baseline:
        best = result.baselines["best_heuristic"]
        print(
            f"warning: the trained policy validates at {result.validation['slo_attainment']:.2%}, "
            f"below the best heuristic ({best['name']}, {best['slo_attainment']:.2%})"
        )
    print(f"wrote {result.out / 'scorer.pt'} and policy.json in {result.wall_seconds:.0f} s")
    return 0


def cmd_gen_fleet(args: argparse.Namespace) -> int:
    from optimizer.fleetgen import FleetSpecError, fleet_yaml, generate_fleet

    try:
        topology = generate_fleet(args.nodes, args.sites, args.seed)
    except FleetSpecError as exc:
        raise InputFileError(args.out, [str(exc)]) from exc
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(fleet_yaml(topology, args.nodes, args.sites, args.seed), encoding="utf-8")
    except OSError as exc:
        raise InputFileError(
            args.out, [f"{out}: cannot write the topology: {exc.strerror}"]
        ) from exc
    print(
        f"wrote {out}: {len(topology.nodes)} nodes, {len(topology.sites)} sites, "
        f"{len(topology.links)} links, {len(topology.sources)} sources, {len(topology.slos)} SLOs"
    )
    return 0


def cmd_bench_scorer(args: argparse.Namespace) -> int:
    from optimizer.rl.bench import benchmark

    print(benchmark(load_topology(args.topology), args.policy, repeats=args.repeats))
    return 0


def cmd_bench_decide(args: argparse.Namespace) -> int:
    from optimizer.bench_decide import benchmark, format_table

    result = benchmark(
        load_topology(args.topology), args.policy, args.repeats, args.seed, args.cpu_time
    )
    print(json.dumps(result, indent=2) if args.json else format_table(result, args.cpu_time))
    return 0


def _number(text: str, kind: type[int] | type[float], *, low: float, strict: bool) -> Any:
    """`text` as `kind`, finite and above `low` (at or above when not `strict`)."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < low or (strict and value == low):
        bound = f"{'>' if strict else '>='} {low:g}"
        raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text!r}")
    return value


def _positive(text: str) -> float:
    return float(_number(text, float, low=0, strict=True))


def _non_negative(text: str) -> float:
    return float(_number(text, float, low=0, strict=False))


def _count(text: str) -> int:
    """A whole number >= 1 (timesteps, a request limit, repeats)."""
    return int(_number(text, int, low=1, strict=False))


def _natural(text: str) -> int:
    """A whole number >= 0 (seeds, warm-start steps)."""
    return int(_number(text, int, low=0, strict=False))


def _floats(text: str) -> list[float]:
    return [_positive(v) for v in text.split(",") if v.strip()]


def _ints(text: str) -> list[int]:
    return [_natural(v) for v in text.split(",") if v.strip()]


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
        type=_positive,
        default=1.0,
        help="scale the arrival rate (2 replays twice as fast)",
    )
    scale.add_argument(
        "--utilisation",
        type=_positive,
        default=None,
        help="offer this share of the fleet's serving capacity for the trace instead "
        "(1 = fluid saturation; docs/learned-policy.md)",
    )
    parser.add_argument("--limit", type=_count, default=None, help="use the first N requests")
    parser.add_argument(
        "--events", default=None, help="YAML/JSON schedule of drain/cordon/fail/recover events"
    )
    parser.add_argument(
        "--seed", type=_natural, default=0, help="seed for sources, models, policies"
    )
    parser.add_argument(
        "--telemetry-interval",
        type=_positive,
        default=None,
        metavar="S",
        help="policies see node state as the live engine does, through telemetry S seconds "
        "apart (docs/decision-kernel.md); default: the exact state",
    )


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
        type=_count,
        default=DEFAULT_MIN_SAMPLES,
        help="measured requests a profile or link needs to be fitted",
    )
    cal.add_argument(
        "--fit-links", action="store_true", help="also fit the RTT of links with enough data"
    )
    cal.add_argument("--seed", type=_natural, default=0, help="seed for drawn sources/models")
    cal.set_defaults(func=cmd_calibrate)

    ev = commands.add_parser("evaluate", help="compare policies on the same arrivals")
    _common(ev)
    ev.add_argument(
        "--policies",
        type=_policy_list,
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
    tr.add_argument("--timesteps", type=_count, default=500_000, help="PPO steps (decisions)")
    tr.add_argument("--out", required=True, help="output directory (scorer.pt, policy.json)")
    tr.add_argument("--seed", type=_natural, default=0, help="seed of everything random")
    tr.add_argument(
        "--teacher",
        default="slo-aware",
        choices=("slo-aware", *POLICY_NAMES),
        help="rule the warm start imitates: slo-aware (optimizer.rl.teacher) or a heuristic",
    )
    tr.add_argument(
        "--bc-steps", type=_natural, default=100_000, help="warm-start decisions (0: none)"
    )
    tr.add_argument("--bc-epochs", type=_count, default=15, help="passes over the demonstrations")
    tr.add_argument(
        "--cost-weight",
        type=_non_negative,
        default=None,
        help="reward per USD per 1k requests of each finished request (default: RewardConfig's)",
    )
    tr.add_argument(
        "--validate-every", type=_count, default=20_000, help="PPO steps between validations"
    )
    tr.add_argument(
        "--eval-trace",
        default=None,
        help="held-out trace for the final evaluation against every heuristic",
    )
    tr.add_argument("--eval-loads", type=_floats, default=[1.0, 3.5], help="e.g. 1,3.5")
    tr.add_argument("--eval-seeds", type=_ints, default=[0, 1, 2], help="e.g. 0,1,2")
    tr.set_defaults(func=cmd_train)

    bs = commands.add_parser(
        "bench-scorer", help="scorer.pt latency at 8/64/256 candidates vs the heuristics"
    )
    bs.add_argument("--topology", default=str(DEFAULT_TOPOLOGY), help="topology YAML")
    bs.add_argument("--policy", required=True, help="a directory written by train")
    bs.add_argument("--repeats", type=_count, default=2000, help="timed calls per measurement")
    bs.add_argument("--seed", type=_natural, default=0, help="accepted for uniformity")
    bs.set_defaults(func=cmd_bench_scorer)

    bd = commands.add_parser(
        "bench-decide",
        help="decision µs p50/p99 at 8/64/256/1000 candidates: kernel vs per-node reference",
    )
    bd.add_argument("--topology", default=str(DEFAULT_TOPOLOGY), help="topology YAML")
    bd.add_argument("--policy", default=None, help="a directory written by train (optional)")
    bd.add_argument("--json", action="store_true", help="print the figures as JSON")
    bd.add_argument("--repeats", type=_count, default=300, help="timed decisions per figure")
    bd.add_argument(
        "--cpu-time",
        action="store_true",
        help="time the process's CPU time, leaving out waits for a core (shared machines)",
    )
    bd.add_argument("--seed", type=_natural, default=0, help="seed of the random states")
    bd.set_defaults(func=cmd_bench_decide)

    gen = commands.add_parser(
        "gen-fleet", help="write a valid, realistic generated topology (docs/learned-policy.md)"
    )
    gen.add_argument("--nodes", type=_count, required=True, help="number of nodes (>= 1)")
    gen.add_argument("--sites", type=_count, required=True, help="number of sites (>= 1)")
    gen.add_argument("--seed", type=_natural, default=0, help="the same seed writes the same file")
    gen.add_argument("--out", required=True, help="topology YAML to write")
    gen.set_defaults(func=cmd_gen_fleet)

    pol = commands.add_parser("policies", help="list the built-in policies and the generalist")
    pol.add_argument("--seed", type=_natural, default=0, help="accepted for uniformity")
    pol.set_defaults(func=cmd_policies)

    bench = commands.add_parser("bench", help="print sim_speedup per policy and trace")
    _common(bench, trace=False)
    bench.add_argument("--traces", nargs="+", default=[str(p) for p in DEFAULT_TRACES])
    bench.add_argument("--policies", type=_policy_list, default=list(POLICY_NAMES))
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
