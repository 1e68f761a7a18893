"""`heldout-suite`: judge the zero-shot (and fine-tuned) learned policy on the held-out fleets
against every heuristic and the oracle (`optimizer.heldout`), write the JSON report and print
the Markdown table."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer import argtypes
from optimizer.commands.replay import progress_shown, write_json
from optimizer.decide.registry import GENERALIST, POLICY_NAMES, SHIPPED
from optimizer.errors import InputFileError

if TYPE_CHECKING:
    from optimizer.heldout.reuse import EarlierReport
    from optimizer.heldout.run import SuiteConfig


def add_parser(commands: Any) -> None:
    """Register `heldout-suite` on the CLI's subparsers."""
    hs = commands.add_parser(
        "heldout-suite",
        help="judge learned policies on the held-out fleets x shipped traces x loads",
    )
    hs.add_argument(
        "--zero-shot",
        type=argtypes.name,
        default=GENERALIST,
        help="policy judged zero-shot: 'generalist' (default), 'generalist-guarded', a train "
        "output directory or a heuristic's name",
    )
    hs.add_argument(
        "--fine-tuned",
        type=argtypes.name,
        default=None,
        metavar="DIR",
        help="directory with one fine-tuned policy per fleet, in a subdirectory named after it "
        "(or one per fleet and seed, in <fleet>/seed-<s>/)",
    )
    hs.add_argument(
        "--reuse",
        type=argtypes.name,
        default=None,
        metavar="REPORT",
        help="take the runs an earlier suite report already holds (same limit and telemetry "
        "interval; heuristics, oracle, and the same zero-shot/fine-tuned policies) instead of "
        "replaying them, once --reuse-check of them replay the same",
    )
    hs.add_argument(
        "--reuse-check",
        type=argtypes.natural,
        default=None,
        metavar="N",
        help="runs of the --reuse report replayed again and compared before any is taken "
        "(default 10; 0 trusts the report)",
    )
    hs.add_argument(
        "--heuristics",
        type=argtypes.names,
        default=list(POLICY_NAMES),
        help="heuristics the best one is picked from (default: every built-in)",
    )
    hs.add_argument("--seeds", type=argtypes.naturals, default=[0, 1, 2], help="e.g. 0,1,2")
    hs.add_argument(
        "--limit", type=argtypes.count, default=4000, help="requests per replay (trace head)"
    )
    hs.add_argument(
        "--telemetry-interval",
        type=argtypes.positive,
        default=10.0,
        metavar="S",
        help="policies see node state through telemetry S seconds apart (default 10)",
    )
    hs.add_argument(
        "--workers", type=argtypes.count, default=2, help="processes running replays (default 2)"
    )
    hs.add_argument("--fleets", type=argtypes.names, default=None, help="only these fleets")
    hs.add_argument(
        "--traces", type=argtypes.names, default=None, help="only these shipped trace files"
    )
    hs.add_argument(
        "--report", type=argtypes.name, required=True, help="write the JSON report here"
    )
    hs.add_argument(
        "--table", type=argtypes.name, default=None, help="also write the Markdown table here"
    )
    hs.add_argument(
        "--seed", type=argtypes.natural, default=0, help="accepted for uniformity; see --seeds"
    )
    hs.set_defaults(func=cmd_heldout_suite)


def _config(args: argparse.Namespace) -> SuiteConfig:
    """The run's configuration, every option checked before the first replay."""
    from optimizer.heldout.run import SuiteConfig
    from optimizer.heldout.suite import cells
    from optimizer.heldout.tuned import fine_tuned_policies, policy_dir_problems

    problems = []
    unknown = sorted(set(args.heuristics) - set(POLICY_NAMES))
    if unknown:
        problems.append(
            f"--heuristics: unknown {', '.join(unknown)}; built-in: {', '.join(POLICY_NAMES)}"
        )
    if not args.seeds:
        problems.append("--seeds: give at least one seed")
    if args.reuse_check is not None and args.reuse is None:
        problems.append("--reuse-check: only with --reuse")
    if args.workers > (os.cpu_count() or 1):
        problems.append(f"--workers: at most {os.cpu_count() or 1} on this machine")
    if args.zero_shot not in (*SHIPPED, *POLICY_NAMES):
        problems += policy_dir_problems("--zero-shot", Path(args.zero_shot))
    try:
        suite = cells(args.fleets, args.traces)
    except ValueError as exc:
        problems.append(f"--fleets/--traces: {exc}")
        suite = []
    if args.fine_tuned is not None and suite:
        fleets = sorted({c.fleet for c in suite})
        problems += fine_tuned_policies(Path(args.fine_tuned), fleets, args.seeds or [0])[1]
    if problems:
        raise InputFileError("heldout-suite", problems)
    return SuiteConfig(
        heuristics=tuple(args.heuristics),
        zero_shot=args.zero_shot,
        fine_tuned=args.fine_tuned,
        seeds=tuple(args.seeds),
        limit=args.limit,
        telemetry_interval_s=args.telemetry_interval,
        workers=args.workers,
        fleets=tuple(args.fleets) if args.fleets else None,
        traces=tuple(args.traces) if args.traces else None,
    )


def _reusable(config: SuiteConfig, path: str, check: int | None) -> EarlierReport:
    """The runs of the report at `path` this run may take (`optimizer.heldout.reuse`)."""
    from optimizer.heldout.reuse import DEFAULT_CHECK, EarlierReport, reusable_runs

    try:
        earlier = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputFileError(path, [f"--reuse: {path}: cannot read: {exc.strerror}"]) from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(path, [f"--reuse: {path}: not JSON: {exc}"]) from exc
    if not isinstance(earlier, dict):
        raise InputFileError(path, [f"--reuse: {path}: not a heldout-suite report"])
    try:
        runs = reusable_runs(config, earlier)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise InputFileError(
            path,
            [
                f"{exc}"
                if isinstance(exc, ValueError)
                else f"--reuse: {path}: not a heldout-suite report ({exc!r})"
            ],
        ) from exc
    return EarlierReport(path, runs, DEFAULT_CHECK if check is None else check)


def cmd_heldout_suite(args: argparse.Namespace) -> int:
    # Imported here: the replay machinery is only needed when the suite runs.
    from optimizer.heldout.run import run_suite
    from optimizer.heldout.table import render

    config = _config(args)
    try:
        reuse = None if args.reuse is None else _reusable(config, args.reuse, args.reuse_check)
        report = run_suite(config, progress_shown(), reuse)
    except InputFileError:
        raise
    except ValueError as exc:
        raise InputFileError("heldout-suite", [f"heldout-suite: {exc}"]) from exc
    write_json(Path(args.report), report)
    table = render(report)
    if args.table:
        path = Path(args.table)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(table, encoding="utf-8")
        except OSError as exc:
            raise InputFileError(str(path), [f"{path}: cannot write: {exc.strerror}"]) from exc
    print(table)
    print(f"report: {args.report} ({report['wall_seconds']:.0f} s)")
    return 0
