"""Prefill and decode pool sizes for a trace on a topology, DistServe's way (issue #30).

    .venv/bin/python -m tools.pd_size [--fleet optimizer/topologies/pd-two-regions.yaml] \
        [--trace optimizer/data/traces/mooncake_synthetic.jsonl] [--limit 2000] \
        [--model llama-3.1-8b] [--group jurisdiction|fleet]

Prints, per group of GPUs of one accelerator (by default each jurisdiction's), the prefill and
decode GPU-seconds per request, the P:D GPU ratio and how many of the group's GPUs should
decode (`optimizer.pd_sizing`: Zhong et al., DistServe, OSDI'24, section 4). It reads only the
trace's token statistics and the profiles, so it can size a fleet before any replay;
`optimizer/topologies/pd-two-regions-sized.yaml` cites its output.
"""

from __future__ import annotations

import argparse
import sys

from optimizer.capacity import TokenMix
from optimizer.errors import InputFileError
from optimizer.pd_sizing import by_jurisdiction, size_pools, sizing_table
from optimizer.topology_files import load_topology
from optimizer.traces import load_trace


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fleet", default="optimizer/topologies/pd-two-regions.yaml")
    ap.add_argument("--trace", default="optimizer/data/traces/mooncake_synthetic.jsonl")
    ap.add_argument("--limit", type=_positive, default=2000)
    ap.add_argument("--model", default=None, help="default: the topology's first model")
    ap.add_argument("--group", choices=("jurisdiction", "fleet"), default="jurisdiction")
    args = ap.parse_args(argv)
    try:
        topology = load_topology(args.fleet)
        mix = TokenMix.of(load_trace(args.trace, limit=args.limit))
    except InputFileError as exc:  # a file that cannot be read: say why, as `optimizer` does
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2) from None
    model = args.model or topology.models[0].name
    if model not in {m.name for m in topology.models}:
        ap.error(f"--model {model!r} is not served by {args.fleet}")
    group = by_jurisdiction(topology) if args.group == "jurisdiction" else None
    print(sizing_table(size_pools(topology, model, mix, group), mix))


if __name__ == "__main__":
    main()
