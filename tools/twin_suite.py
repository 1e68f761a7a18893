"""The twin on the held-out suite's fleets with perturbed truths (issue #26, "Done when"): a grid.

    nice .venv/bin/python -m tools.twin_suite [--fleets gpu-poor-regional,...] \
        [--traffic spread,concentrated] [--utilisations 0.6,1.5] [--limit 2500] \
        [--truth-seeds 26,27,28] [--seed 0] [--telemetry-interval 10] \
        [--out docs/results/reports/twin-suite/grid.json]

For each fleet of the suite (`optimizer/topologies/heldout/`) and each of `--truth-seeds`,
its *truth* is the fleet with every profile value's time multiplied by its own seeded draw
(`truth_factors`: U(0.75, 1.3), a prefill rate divided by it; a quarter of the values left at
1, so "did not move" is checked on values that must not). The truth serves the first
`--limit` requests of the fleet's one trace (TRACES) at each utilisation of the *nominal*
fleet's capacity, placed by each traffic kind's policy (`optimizer.calibration.scenarios`: spread =
least-loaded, concentrated = weighted-score), with 10 s telemetry; `calibrate` then starts
from the nominal fleet on those observations, exactly as the command does.

Each value is judged (`judge`): *pinned* when its status says the data pins it down (fitted,
or agrees_with_nominal), else *unpinned* (insufficient_data, not_identifiable). Recovered:
pinned and the proposal within 10% of the truth; missed: pinned and more than 10% off; kept:
unpinned and within 10% of nominal; moved without data: unpinned and moved more than 10%. The
three goals per cell: every pinned value recovered; nothing moved without data; the proposal's
held-out TTFT median and p95 errors no worse than the nominal fleet's. Nothing is tuned on
this: it reports what the calibration does. Each finished cell is saved to `--out` at once (a
rerun skips those already there); prints the Markdown table (`tools.results.twin`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from optimizer.calibration import calibrate
from optimizer.calibration.replay import rebuilt
from optimizer.calibration.report import PROFILE_VALUES
from optimizer.calibration.scenarios import TRAFFIC, Scenario, observe
from optimizer.heldout.guard import HELDOUT_DIR
from optimizer.heldout.suite import fleet_names
from optimizer.topology import Topology
from optimizer.topology_files import load_topology
from optimizer.traces import SHIPPED_TRACES
from tools.results.twin import twin_table

# One trace per fleet, each trace on two fleets or more: Mooncake (long prompts) for the
# Mooncake-shaped fleet, the H100 pool and the sovereign fleet (the trace issue #26's
# evaluator ran it on), the Azure conversation trace for the two small-GPU fleets.
TRACES = {
    "gpu-poor-regional": "azure_llm_2023_conv.csv",
    "llmd-h100-pool": "mooncake_synthetic.jsonl",
    "mooncake-long-context": "mooncake_synthetic.jsonl",
    "retail-edge": "azure_llm_2023_conv.csv",
    "sovereign-eu-us": "mooncake_synthetic.jsonl",
}
LOW, HIGH = 0.75, 1.3  # a value's time factor is drawn from U(LOW, HIGH)
UNCHANGED_SHARE = 0.25  # values left exactly at nominal
TOLERANCE = 0.10
PINNED = ("fitted", "agrees_with_nominal")


def truth_factors(topology: Topology, fleet: str, seed: int) -> dict[str, dict[str, float]]:
    """Per profile (`model@accelerator`) and value, the factor its *time* is multiplied by:
    1 for about UNCHANGED_SHARE of them, else U(LOW, HIGH), drawn from `seed` and the fleet's
    name (so adding a fleet changes no other fleet's truth)."""
    rng = np.random.default_rng([seed, zlib.crc32(fleet.encode())])
    out: dict[str, dict[str, float]] = {}
    for p in topology.profiles:
        draws = rng.uniform(LOW, HIGH, len(PROFILE_VALUES))
        keep = rng.random(len(PROFILE_VALUES)) < UNCHANGED_SHARE
        out[f"{p.model}@{p.accelerator}"] = {
            name: 1.0 if k else round(float(f), 4)
            for name, f, k in zip(PROFILE_VALUES, draws, keep, strict=True)
        }
    return out


def truth_of(topology: Topology, factors: dict[str, dict[str, float]]) -> Topology:
    """`topology` with each profile value's time scaled by its factor (a rate divided by it)."""
    profiles = []
    for p in topology.profiles:
        f = factors[f"{p.model}@{p.accelerator}"]
        profiles.append(
            p.model_copy(
                update={
                    "prefill_tokens_per_s": round(
                        p.prefill_tokens_per_s / f["prefill_tokens_per_s"], 2
                    ),
                    "decode_step_ms": round(p.decode_step_ms * f["decode_step_ms"], 5),
                    "decode_step_ms_per_seq": round(
                        p.decode_step_ms_per_seq * f["decode_step_ms_per_seq"], 6
                    ),
                }
            )
        )
    return rebuilt(topology, profiles=tuple(profiles))


def _off(value: float, reference: float) -> float:
    if reference == 0:
        return 0.0 if value == 0 else float("inf")
    return abs(value / reference - 1.0)


def judge(report: dict[str, Any], truth: Topology) -> list[dict[str, Any]]:
    """Every profile value of a calibration report: nominal, truth, proposed, status, class."""
    true = {f"{p.model}@{p.accelerator}": p for p in truth.profiles}
    out = []
    for entry in report["profiles"]:
        key = f"{entry['model']}@{entry['accelerator']}"
        for name in PROFILE_VALUES:
            v = entry["values"][name]
            want = float(getattr(true[key], name))
            pinned = v["status"] in PINNED
            if pinned:
                kind = "recovered" if _off(v["fitted"], want) <= TOLERANCE else "missed"
            else:
                kind = "kept" if _off(v["fitted"], v["nominal"]) <= TOLERANCE else "moved"
            out.append(
                {
                    "profile": key,
                    "value": name,
                    "nominal": v["nominal"],
                    "truth": want,
                    "proposed": v["fitted"],
                    "status": v["status"],
                    "samples": v["samples"],
                    # Why it was (not) pinned: the 95% interval, its relative half-width, and
                    # the profile's TTFT rows kept as queue-free against left out as queued.
                    "interval": v["interval"],
                    "relative_ci": v["identifiability"]["relative_ci"],
                    "ttft_rows": entry["ttft_rows"],
                    "class": kind,
                }
            )
    return out


def run_cell(
    fleet: str,
    truth_seed: int,
    traffic: str,
    utilisation: float,
    args: argparse.Namespace,
    tmp: Path,
) -> dict[str, Any]:
    """Observe the truth, calibrate from nominal, judge every value and the held-out errors."""
    started = time.perf_counter()
    nominal = load_topology(HELDOUT_DIR / f"{fleet}.yaml")
    factors = truth_factors(nominal, fleet, truth_seed)
    truth = truth_of(nominal, factors)
    trace = TRACES[fleet]
    scenario = Scenario(
        str(SHIPPED_TRACES / trace),
        traffic,
        utilisation,
        args.limit,
        args.seed,
        args.telemetry_interval,
    )
    observations = observe(nominal, truth, scenario, tmp / f"{fleet}-{traffic}-{utilisation}.jsonl")
    result = calibrate(nominal, observations)
    fidelity = result.report["fidelity"]
    return {
        "fleet": fleet,
        "trace": trace,
        "traffic": traffic,
        "policy": TRAFFIC[traffic],
        "utilisation": utilisation,
        "limit": args.limit,
        "seed": args.seed,
        "truth_seed": truth_seed,
        "telemetry_interval_s": args.telemetry_interval,
        "factors": factors,
        "measured": result.report["measured"],
        "held_out": result.report["held_out_requests"],
        "values": judge(result.report, truth),
        "before": fidelity["before"],
        "after": fidelity["after"],
        "verdict": result.report["verdict"],
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def _grid(args: argparse.Namespace, fleets: list[str]) -> dict[str, tuple[str, int, str, float]]:
    """Every cell to run, by its key in the report."""
    return {
        f"{fleet}|{truth}|{traffic}|{util:g}": (fleet, truth, traffic, util)
        for fleet in fleets
        for truth in (int(s) for s in args.truth_seeds.split(",") if s)
        for traffic in (t for t in args.traffic.split(",") if t)
        for util in (float(u) for u in args.utilisations.split(",") if u)
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fleets", default=",".join(fleet_names()))
    ap.add_argument("--traffic", default=",".join(TRAFFIC))
    ap.add_argument("--utilisations", default="0.6,1.5")
    ap.add_argument("--limit", type=int, default=2500)
    ap.add_argument("--truth-seeds", default="26,27,28")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--telemetry-interval", type=float, default=10.0)
    ap.add_argument("--out", default="var/twin-suite/grid.json")
    args = ap.parse_args(argv)
    fleets = [f for f in args.fleets.split(",") if f]
    unknown = sorted(set(fleets) - set(TRACES))
    if unknown:
        ap.error(f"--fleets: unknown {unknown}; the suite has {sorted(TRACES)}")
    out = Path(args.out)
    cells: dict[str, dict[str, Any]] = json.loads(out.read_text()) if out.exists() else {}
    with tempfile.TemporaryDirectory() as directory:
        for key, (fleet, truth, traffic, util) in _grid(args, fleets).items():
            if key in cells:
                continue
            cell = run_cell(fleet, truth, traffic, util, args, Path(directory))
            cells[key] = cell
            classes = [v["class"] for v in cell["values"]]
            print(
                f"{key}: {cell['verdict']['verdict']}, "
                + ", ".join(f"{c} {classes.count(c)}" for c in sorted(set(classes)))
                + f" ({cell['wall_seconds']:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(cells, indent=1) + "\n", encoding="utf-8")
    print(twin_table(list(cells.values())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
