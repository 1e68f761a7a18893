"""`gen-fleet` (a generated topology) and the decision benchmarks, `bench-scorer` and
`bench-decide`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from optimizer.errors import InputFileError
from optimizer.topology_files import load_topology


def cmd_gen_fleet(args: argparse.Namespace) -> int:
    from optimizer.fleetgen import FleetSpecError, fleet_yaml, generate_fleet

    try:
        topology = generate_fleet(args.nodes, args.sites, args.seed, args.slo_scale)
    except FleetSpecError as exc:
        raise InputFileError(args.out, [str(exc)]) from exc
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            fleet_yaml(topology, args.nodes, args.sites, args.seed, args.slo_scale),
            encoding="utf-8",
        )
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
        load_topology(args.topology),
        args.policy,
        args.repeats,
        args.seed,
        args.cpu_time,
        splitter=args.split,
    )
    print(json.dumps(result, indent=2) if args.json else format_table(result, args.cpu_time))
    return 0
