"""`make bench-routers`: every router in turn in front of a fresh emulated fleet, same replay.

For each fleet (single-site: `bench-single-site.yaml`; multi-site: `fleet-demo.yaml`) and load
(moderate: utilisation 0.5; heavy: 1.5, as docs/learned-policy.md's held-out table), the plan
is made once; then for each router: start `serve-fleet`, start the router over the fleet's
workers, wait until it answers, check whether it passes `x-locus-source` on, run the probe
pairs, replay the plan (`loadgen.py` in the bench venv) while taking the router's CPU time from
/proc, read the nodes' token counters, stop both, and keep the raw record under
`var/bench/raw/`. The report (`var/bench/routers.json`, contract shape; details and notes in
`routers-details.json`; plots beside them) merges into an existing one, so a later run of
some routers (say `--routers locus-generalist`) adds their rows to the peers'.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from optimizer.topology_files import load_topology
from routers import fleet as fleets
from routers.locus import locus_routers
from routers.peers import FleetTarget, RouterSpec, peer_routers
from routers.plan import make_plan, write_plan
from routers.plots import write_plots
from routers.report import check_shape, extras, markdown_table, router_row

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
TRACE = REPO / "optimizer" / "data" / "traces" / "mooncake_synthetic.jsonl"
FLEET_FILES = {
    "single-site": REPO / "optimizer" / "topologies" / "bench-single-site.yaml",
    "multi-site": REPO / "optimizer" / "topologies" / "fleet-demo.yaml",
}
UTILISATION = {"moderate": 0.5, "heavy": 1.5}


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_routers.py", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smoke run: 4 s windows, 4 probe pairs")
    p.add_argument("--fleets", type=_names, default=list(FLEET_FILES))
    p.add_argument("--loads", type=_names, default=list(UTILISATION))
    p.add_argument("--routers", type=_names, default=None, help="names (default: every one)")
    # 20 s of trace and at most 45 s of drain keep the full run (20 peer runs, 8 more with
    # Locus's rows) near 30 minutes on 2 cores: each run is real time plus ~15 s of start-up.
    p.add_argument("--window-s", type=float, default=20.0, help="seconds of trace replayed")
    p.add_argument("--drain-s", type=float, default=45.0, help="wait after the last send")
    p.add_argument("--probes", type=int, default=40, help="added-latency probe pairs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trace", type=Path, default=TRACE)
    p.add_argument("--port-base", type=int, default=20500, help="fleet P.., routers P+40..")
    p.add_argument("--bench-venv", type=Path, default=REPO / "var" / "bench-venv")
    p.add_argument("--out", type=Path, default=REPO / "var" / "bench" / "routers.json")
    p.add_argument("--fresh", action="store_true", help="do not merge into an existing report")
    p.add_argument(
        "--table", action="store_true", help="print --out as a Markdown table, run nothing"
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="rebuild --out, its details and plots from the raw records beside it, run nothing",
    )
    args = p.parse_args(argv)
    args.bench_venv = args.bench_venv.resolve()
    if args.quick:
        args.window_s, args.drain_s, args.probes = 4.0, 20.0, 4
    return args


def run_router(
    spec: RouterSpec, fleet_name: str, plan_file: Path, plan_rows: list[dict[str, Any]],
    args: argparse.Namespace, work: Path,
) -> dict[str, Any]:  # fmt: skip
    """One router over a fresh fleet: the raw record `report.router_row` reads."""
    topo_file = FLEET_FILES[fleet_name]
    topology = load_topology(topo_file)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    fleet = fleets.start_fleet(
        topo_file, topology, args.port_base, fleets.python_for_fleet(), logs / "fleet.log"
    )
    phases = {"fleet_ready": time.monotonic()}
    running = None
    try:
        workers = fleets.workers_by_model(topology, fleet.urls)
        target = FleetTarget(topo_file, fleet.urls, fleet.source)
        running = spec.start(workers, args.port_base + 40, logs, target)
        fleets.wait_ready(running.urls, running.api_key)
        phases["router_ready"] = time.monotonic()
        forwards = fleets.forwards_source(running.urls, running.api_key)
        targets = work / "targets.json"
        targets.write_text(
            json.dumps({"models": running.urls, "nodes": fleet.urls, "api_key": running.api_key})
        )
        bench_python = str(args.bench_venv / "bin" / "python")
        loadgen = [bench_python, str(HERE / "loadgen.py"), "--targets", str(targets)]
        probes_file = work / "probes.jsonl"
        subprocess.run(
            [*loadgen, "--probes", str(args.probes), "--probes-out", str(probes_file)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        results_file = work / "results.jsonl"
        phases["probed"] = time.monotonic()
        cpu0 = fleets.tree_cpu_s(running.pids)
        replay = subprocess.run(
            [*loadgen, "--plan", str(plan_file), "--out", str(results_file)]
            + ["--drain-s", str(args.drain_s)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        cpu1 = fleets.tree_cpu_s(running.pids)
        phases["replayed"] = time.monotonic()
        counters = fleets.prefill_tokens(fleet.urls)
    finally:
        if running is not None:
            running.stop()
        fleet.stop()
    return {
        "router": spec.name,
        "note": spec.note,
        "fleet": fleet_name,
        "fleet_source": fleet.source,
        "forwards_source": forwards,
        "router_cpu_s": cpu1 - cpu0,
        "phase_s": {k: round(v - phases["fleet_ready"], 2) for k, v in phases.items()},
        "loadgen": json.loads(replay.stdout.strip().splitlines()[-1]),
        "plan": plan_rows,
        "results": _jsonl(results_file),
        "probes": _jsonl(probes_file),
        "counters": [
            {"node": n, "model": m, "prompt": t, "hits": h} for (n, m), (t, h) in counters.items()
        ],
    }


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def _merge(path: Path, fresh: bool) -> dict[str, Any]:
    if fresh or not path.exists():
        return {"fleets": {}}
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def _write(out: Path, report: dict[str, Any], details: dict[str, Any]) -> None:
    out.write_text(json.dumps(report, indent=1) + "\n")
    out.with_name("routers-details.json").write_text(json.dumps(details, indent=1) + "\n")


def _add(report: dict[str, Any], details: dict[str, Any], raw: dict[str, Any], load: str) -> None:
    topology = load_topology(FLEET_FILES[raw["fleet"]])
    row = router_row(topology, raw)
    report["fleets"].setdefault(raw["fleet"], {}).setdefault(load, {})[raw["router"]] = row
    info = extras(topology, raw) | {
        "note": raw["note"],
        "load": raw.get("load"),
        "phase_s": raw["phase_s"],
    }
    details["fleets"].setdefault(raw["fleet"], {}).setdefault(load, {})[raw["router"]] = info


def rebuild(out: Path) -> int:
    """The report from every raw record under `out`'s `raw/` directory."""
    report: dict[str, Any] = {"fleets": {}}
    details: dict[str, Any] = {"fleets": {}}
    for path in sorted((out.parent / "raw").glob("*-*/*.json")):
        load = path.parent.name.rpartition("-")[2]
        _add(report, details, json.loads(path.read_text()), load)
    problems = check_shape(report)
    if problems:
        print("error: report shape: " + "; ".join(problems), file=sys.stderr)
        return 1
    _write(out, report, details)
    write_plots(report, out.parent)
    print(f"rebuilt {out} from {out.parent / 'raw'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.table:
        print(markdown_table(json.loads(args.out.read_text())))
        return 0
    if args.rebuild:
        return rebuild(args.out)
    routers = [*locus_routers(), *peer_routers(args.bench_venv / "bin")]
    specs = {s.name: s for s in routers}
    chosen = args.routers or list(specs)
    unknown = [n for n in chosen if n not in specs]
    bad = [f for f in args.fleets if f not in FLEET_FILES] + [
        x for x in args.loads if x not in UTILISATION
    ]
    if unknown or bad:
        print(f"error: unknown {', '.join(unknown + bad)}", file=sys.stderr)
        return 2
    raw_dir = args.out.parent / "raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    report = _merge(args.out, args.fresh)
    details = _merge(args.out.with_name("routers-details.json"), args.fresh)
    for fleet_name in args.fleets:
        topology = load_topology(FLEET_FILES[fleet_name])
        for load_name in args.loads:
            plan = make_plan(
                topology, args.trace, utilisation=UTILISATION[load_name],
                window_s=args.window_s, seed=args.seed,
            )  # fmt: skip
            work = raw_dir / f"{fleet_name}-{load_name}"
            work.mkdir(parents=True, exist_ok=True)
            plan_file = work / "plan.jsonl"
            write_plan(plan, args.trace, plan_file)
            rows = [asdict(p) for p in plan.requests]
            print(
                f"{fleet_name} {load_name}: {len(rows)} requests over {args.window_s:.0f} s "
                f"({plan.requests_per_s:.2f} req/s, load {plan.load:.2f}x)",
                flush=True,
            )
            for name in chosen:
                began = time.monotonic()
                raw = run_router(specs[name], fleet_name, plan_file, rows, args, work / name)
                raw["load"] = plan.load
                (work / f"{name}.json").write_text(json.dumps(raw))
                _add(report, details, raw, load_name)
                row = report["fleets"][fleet_name][load_name][name]
                print(
                    f"  {name}: SLO {row['slo_attainment']:.3f} TTFT p95 "
                    f"{row['ttft_ms']['p95']:.0f} ms, added p99 {row['added_ms']['p99']:.2f} ms, "
                    f"{row['cpu_us_per_request']:.0f} us CPU/req, "
                    f"{row['residency_violations']} violations "
                    f"({time.monotonic() - began:.0f} s)",
                    flush=True,
                )
                _write(args.out, report, details)
    problems = check_shape(report)
    if problems:
        print("error: report shape: " + "; ".join(problems), file=sys.stderr)
        return 1
    write_plots(report, args.out.parent)
    print(f"wrote {args.out} and plots in {args.out.parent}")
    return 0
