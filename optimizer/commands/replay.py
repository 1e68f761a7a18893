"""`simulate`, `evaluate`, `calibrate`, `policies` and `bench` (the simulator's speed): a
trace replayed over a topology (`Workload`), reported as JSON and a table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from optimizer.arrivals import draw_requests
from optimizer.capacity import FleetCapacity, TokenMix, load_for_utilisation, utilisation_of_load
from optimizer.decide.filters.breakers import BreakerConfig
from optimizer.decide.registry import POLICY_NAMES, SHIPPED, get_splitter, load_policy
from optimizer.decide.request import PlacementRequest
from optimizer.errors import InputFileError
from optimizer.observations import load_observations, simulated_observations, write_observations
from optimizer.oracle import oracle_report
from optimizer.report import build_report, format_table
from optimizer.sim import (
    ChunkedPrefill,
    Deciders,
    ScheduledEvent,
    SimResult,
    TelemetryModel,
    load_schedule,
    simulate,
)
from optimizer.topology import Topology
from optimizer.topology_files import dump_topology, load_topology
from optimizer.traces import load_trace


class Workload:
    """A topology, the arrivals of one trace with their drawn sources and models, and events."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.topology: Topology = load_topology(args.topology)
        self.all_mixed: bool = getattr(args, "all_mixed", False)
        if self.all_mixed:
            self.topology = all_mixed(self.topology)
        self.split: str | None = getattr(args, "split", None)
        self.chunked_prefill: ChunkedPrefill | None = getattr(args, "chunked_prefill", None)
        if self.chunked_prefill is not None:
            try:
                self.chunked_prefill.node_budgets(self.topology)
            except ValueError as exc:
                raise InputFileError("--chunked-prefill", [f"--chunked-prefill: {exc}"]) from exc
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
        self.stale_after: float | None = args.stale_after
        if self.stale_after is not None and self.telemetry_interval is None:
            raise InputFileError(
                "--stale-after",
                ["--stale-after needs --telemetry-interval: exact state never ages"],
            )
        self.breakers: BreakerConfig | None = BreakerConfig() if args.breakers else None
        self.deciders = self._deciders(args, [r.session for r in trace])

    def _deciders(self, args: argparse.Namespace, sessions: list[str | None]) -> Deciders | None:
        """`--deciders K` and `--shared-view` as a split of this trace (None: one decider)."""
        if args.shared_view and args.deciders < 2:
            raise InputFileError(
                "--shared-view",
                ["--shared-view needs --deciders 2 or more: one decider's view is shared already"],
            )
        if args.deciders == 1:
            return None
        if self.telemetry_interval is None:
            raise InputFileError(
                "--deciders",
                [
                    "--deciders needs --telemetry-interval: on the exact state every decider "
                    "sees everything, so their number changes nothing"
                ],
            )
        return Deciders.split_of(sessions, args.deciders, shared_view=args.shared_view)

    @classmethod
    def of(
        cls,
        topology: str,
        trace: str,
        *,
        load: float | None = None,
        utilisation: float | None = None,
        seed: int = 0,
        limit: int | None = None,
        telemetry_interval: float | None = None,
        stale_after: float | None = None,
        breakers: bool = False,
        deciders: int = 1,
        shared_view: bool = False,
        split: str | None = None,
        all_mixed: bool = False,
        chunked_prefill: ChunkedPrefill | None = None,
    ) -> Workload:
        """The workload `evaluate` would replay for these options (benchmarks and tools)."""
        return cls(
            argparse.Namespace(
                topology=topology,
                trace=trace,
                limit=limit,
                utilisation=utilisation,
                load=load,
                seed=seed,
                events=None,
                telemetry_interval=telemetry_interval,
                stale_after=stale_after,
                breakers=breakers,
                deciders=deciders,
                shared_view=shared_view,
                split=split,
                all_mixed=all_mixed,
                chunked_prefill=chunked_prefill,
            )
        )

    def filters_report(self) -> dict[str, Any]:
        """The optional live-engine filters this workload ran, for its report (nothing when
        off, so reports of runs without them are unchanged; one decider is not reported)."""
        out: dict[str, Any] = {}
        if self.deciders is not None:
            out["deciders"] = self.deciders.report()
        if self.stale_after is not None:
            out["stale_after_s"] = self.stale_after
        if self.breakers is not None:
            out["breakers"] = True
        if self.split is not None:
            out["split"] = self.split
        if self.all_mixed:
            out["all_mixed"] = True
        if self.chunked_prefill is not None:
            out["chunked_prefill"] = self.chunked_prefill.describe()
        return out

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
            breakers=self.breakers,
            stale_after_s=self.stale_after,
            deciders=self.deciders,
            splitter=get_splitter(self.split) if self.split is not None else None,
            chunked_prefill=self.chunked_prefill,
            progress=progress,
            desc=spec,
        )
        return build_report(result, self.topology, spec), result


def all_mixed(topology: Topology) -> Topology:
    """`topology` with every node mixed (`--all-mixed`): its hardware without P/D roles."""
    data = topology.model_dump()
    data["nodes"] = [{**node, "role": "mixed"} for node in data["nodes"]]
    return Topology.model_validate(data)


def progress_shown() -> bool:
    return sys.stderr.isatty()


def write_json(path: Path, data: dict[str, Any]) -> None:
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


# `calibrate`'s exit status when the proposal is refused (verdict no_improvement, no
# --override): the report is written, the calibrated topology is not.
NO_IMPROVEMENT_EXIT = 3


def cmd_calibrate(args: argparse.Namespace) -> int:
    from optimizer.calibration import calibrate
    from optimizer.calibration.holdout import IMPROVED

    nominal = load_topology(args.topology)
    observations = load_observations(args.observations, nominal, seed=args.seed)
    result = calibrate(
        nominal, observations, min_samples=args.min_samples, fit_links=args.fit_links
    )
    verdict = result.report["verdict"]
    refused = verdict["verdict"] != IMPROVED and not args.override
    result.report["written"] = not refused
    out = Path(args.out)
    if not refused:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(dump_topology(result.topology), encoding="utf-8")
        except OSError as exc:
            raise InputFileError(str(out), [f"{out}: cannot write: {exc.strerror}"]) from exc
    write_json(Path(args.report), result.report)
    fid = result.report["fidelity"]
    print(f"held out: the last {result.report['held_out_requests']} measured requests")
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
    unpinned = [
        f"{p['model']}@{p['accelerator']}.{name}"
        for p in result.report["profiles"]
        for name, value in p["values"].items()
        if value["status"] == "not_identifiable"
    ]
    if unpinned:
        print(f"kept nominal (not identifiable): {', '.join(unpinned)}")
    print(f"verdict: {verdict['verdict']} ({verdict['reason']})")
    if refused:
        print(
            f"not written: {out} (the proposal does not improve the held-out errors; "
            f"--override writes it anyway); wrote {args.report}"
        )
        return NO_IMPROVEMENT_EXIT
    print(f"wrote {out} and {args.report}")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    work = Workload(args)
    report, result = work.run(args.policy, args.seed, progress_shown())
    report.update(
        trace=work.trace_name,
        load=work.load,
        utilisation=work.utilisation,
        seed=args.seed,
        telemetry_interval_s=args.telemetry_interval,
        **work.filters_report(),
    )
    if args.requests_out:
        _write_observations(Path(args.requests_out), result, work.topology)
    if args.report:
        write_json(Path(args.report), report)
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
        report, result = work.run(spec, args.seed, progress_shown())
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
        **work.filters_report(),
    }
    report_path = Path(args.report)
    write_json(report_path, out)
    title = f"{work.trace_name} at load {work.load:.3g}x (utilisation {work.utilisation:.2f})"
    plots = write_plots(report_path, ttft, policies, oracle, title)
    print(title)
    print(format_table(policies, oracle))
    print(f"report: {report_path}; plots: {plots[0]}, {plots[1]}")
    return 0


def cmd_policies(args: argparse.Namespace) -> int:
    # The heuristics, then the shipped learned policy, which `--policy` also takes by name.
    print("\n".join([*POLICY_NAMES, *SHIPPED]))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    rows: list[tuple[str, str, float, float, float]] = []
    for trace in args.traces:
        args.trace = trace
        work = Workload(args)
        for spec in args.policies:
            report, _ = work.run(spec, args.seed, progress_shown())
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
